"""Rounds on static caches with exactly one host sync per round (opt-in; see static_kv): `StaticDecoder`,
the caches kept across generations, and `StaticRoundCache`, one generation's side of them.

A round is the one runner.Runner.step plays on dynamic caches, in the same order of random draws, with
these differences:
- every token lives in a device buffer `ctx` [capacity], so no round copies ids from the host;
- a drafter drafts through its static form (`static_form()`: a draft model steps through a static cache
  of its own); the pass gets the root and the proposal padded to one of PADDED_SIZES, the padding being
  whatever `ctx` holds after the real tokens (masked by position, never kept);
- a tree's accepted path is compacted by an index copy inside the buffers (StaticModel.compact), and the
  accepted tokens written into `ctx` from the host data the round's one sync brought back;
- a feature draft gets the prompt's features from the static prefill with the first round's.
Host syncs: the rule's one packed transfer per round. A prompt-lookup proposal is host data and adds none;
a model or feature draft's tree expansion reads each level's top candidates back to the host
(tree_draft.expand), as it does on dynamic caches.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from .clock import Clock
from .kv import backend_for, context_limit, sync
from .proposals import rule_for
from .protocols import Unsupported, Verified
from .static_kv import (
    MIN_CAPACITY,
    PAD_SLACK,
    PADDED_SIZES,
    StaticModel,
    compile_support,
    static_support,
    verify_size,
)
from .tree import EMPTY
from .tree_verify import static_tree_inputs

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from .proposals import Proposal
    from .protocols import AnyDrafter, CacheKind, Proposer

Progress = Callable[[int, int, str], None]  # (done, total, what) during warm-up
WARM_CALLS = 3  # CUDA graph trees: a warm-up run, the capture, then one replay


class StaticDecoder:
    """Static caches (and compiled steps) for a target and its draft models, kept across generations.

    Pass it to `decode(..., static=...)`; the first generation, or `warm_up`, pays for compiling.
    """

    def __init__(self, target: PreTrainedModel, compile: bool = False, backend: str = "inductor",
                 min_capacity: int = MIN_CAPACITY) -> None:
        reason = static_support(target) or (compile_support(target) if compile else None)
        if reason is not None:
            raise Unsupported(reason)
        self.target = target
        self.compile = compile
        self.options = {"compile": compile, "backend": backend, "min_capacity": min_capacity}
        self.device = next(target.parameters()).device
        self._models: dict[int, StaticModel] = {}

    def model(self, model: PreTrainedModel, capacity: int) -> StaticModel:
        sm = self._models.get(id(model))
        if sm is None or sm.model is not model:
            if next(model.parameters()).device != self.device:
                raise Unsupported("the static cache needs the draft model on the target's device")
            reason = compile_support(model) if self.compile else None
            if reason is not None:
                raise Unsupported(reason.replace("the target", "the draft"))
            sm = self._models[id(model)] = StaticModel(model, capacity, **self.options)  # type: ignore[arg-type]
        else:
            sm.resize(capacity)
        return sm

    @property
    def compile_seconds(self) -> float:
        return sum(sm.compile_seconds for sm in self._models.values())

    def supports(self, drafter: AnyDrafter | None) -> str | None:
        """None when `drafter` (None: target-only) can run on the static path, else a one-line reason."""
        try:
            form = rule_for(drafter, backend_for(self.target), static=True).proposer
        except Unsupported as refused:
            return str(refused)
        for model in getattr(form, "models", ()) if self.compile else ():
            reason = compile_support(model)
            if reason is not None:
                return reason.replace("the target", "the draft")
        return None

    def begin(self, prompt: list[int], proposer: Proposer | None, features: bool, needed: int) -> StaticRoundCache:
        return StaticRoundCache(self, prompt, proposer, features, needed)

    def warm_up(self, drafter: AnyDrafter | None = None, gammas: int | Iterable[int] = 4,
                progress: Progress | None = None) -> float:
        """Run every step shape the given gammas need (an int: every gamma up to it) on a dummy prompt;
        returns seconds. With compile this is where the compiling happens (shown through `progress`).
        """
        start = time.perf_counter()
        gammas = range(1, gammas + 1) if isinstance(gammas, int) else gammas
        rule = rule_for(drafter, backend_for(self.target), static=True)
        sizes = rule.verify_sizes(gammas)
        cache = self.begin([0] * 4, rule.proposer, False, sizes[-1] + 4)
        drafts = [cache.static_model(m) for m in cache.form_models]
        total = len(sizes) + len(drafts)
        for done, size in enumerate(sizes):
            if progress:
                progress(done, total, f"verify step, {size} tokens")
            for _ in range(WARM_CALLS):
                cache.warm_verify(size, tree=rule.kind == "tree")
        for done, draft in enumerate(drafts, len(sizes)):
            if progress:
                progress(done, total, "draft step")
            for _ in range(WARM_CALLS):
                draft.step(cache.ctx[3:4], 3)
        sync(self.device)
        if progress:
            progress(total, total, "ready")
        return time.perf_counter() - start


class StaticRoundCache:
    """One generation on static caches: the token buffer, the caches of one capacity, the prompt's features."""

    kind: CacheKind = "static"

    def __init__(self, decoder: StaticDecoder, prompt: list[int], proposer: Any, features: bool,
                 needed: int) -> None:
        self.decoder, self.device = decoder, decoder.device
        limit = context_limit(decoder.target)
        capacity = min(needed, limit) if limit else needed
        self.target = decoder.model(decoder.target, capacity)
        self.models = [self.target]
        self.form_models: tuple[Any, ...] = proposer.models if proposer is not None else ()
        for model in self.form_models:
            draft = decoder.model(model, self.target.capacity)
            self.target.resize(draft.capacity)  # one capacity for all: a draft may have grown before
            self.models.append(draft)
        self.ctx = torch.zeros(self.target.capacity + PAD_SLACK, dtype=torch.long, device=self.device)
        self.ctx[: len(prompt)] = torch.tensor(prompt, dtype=torch.long)
        # The prompt but its newest token into the target's cache (that token is fed by the first round);
        # a feature draft gets its features with the first round's.
        hidden = self.target.prefill(self.ctx[: len(prompt) - 1])  # [L - 1, H]
        self.prompt_features = hidden if features else None
        if proposer is not None:
            proposer.prepare(self, len(prompt))
        self.clock = Clock(self.device)

    def static_model(self, model: PreTrainedModel) -> StaticModel:
        """The static cache of one of the form's draft models, at this generation's capacity."""
        return self.decoder.model(model, self.target.capacity)

    def context(self, ids_list: list[int], gamma: int) -> torch.Tensor:
        self._ensure(len(ids_list) + verify_size(gamma + 1))  # a draft model steps through its buffers too
        return self.ctx[: len(ids_list)]

    def verify(self, ids_list: list[int], proposal: Proposal, features: bool) -> Verified:
        """The root (the newest context token, fed again at its position) then the proposal, padded."""
        past_len, n = len(ids_list), len(proposal.x)
        if n + 1 > PADDED_SIZES[-1]:
            raise Unsupported(f"a tree of {n} nodes is more than the static cache's largest pass ({PADDED_SIZES[-1] - 1})")
        size = verify_size(n + 1)
        self._ensure(past_len + size)
        self.ctx[past_len : past_len + n].copy_(proposal.x)  # the proposal follows the context in the buffer
        root = past_len - 1
        tokens = self.ctx[root : root + size]
        if proposal.tree is None:
            hidden = self.target.trunk(tokens, root)  # [size, H]
        else:
            pos, block = static_tree_inputs(proposal.tree, past_len, size, self.device)
            hidden = self.target.tree(tokens, root, pos, block)  # [size, H]
        logits = self.target.head(hidden[: n + 1])  # the real rows only: padding costs no vocabulary projection
        if not features:
            return Verified(logits, None, 1, root)
        if self.prompt_features is None:
            return Verified(logits, hidden[: n + 1], 1, root)
        prompt, self.prompt_features = self.prompt_features, None
        return Verified(logits, torch.cat([prompt, hidden[: n + 1]]), past_len, 0)

    def keep(self, ids_list: list[int], path: Sequence[int], emitted: Sequence[int]) -> None:
        past_len = len(ids_list)
        self.target.compact(past_len, path)
        # Proposal row i sits at ctx[past_len + i]: only tokens not already in their slot are written (a
        # chain's accepted drafts are), as scalars, so no round copies a tensor from the host.
        for j, token in enumerate(emitted):
            if j >= len(path) or path[j] != j:
                self.ctx[past_len + j] = token

    def warm_verify(self, size: int, tree: bool) -> None:
        """One pass of `size` tokens on the dummy context (warm-up: its shape compiles here)."""
        if tree:
            pos, block = static_tree_inputs(EMPTY, 4, size, self.device)
            self.target.tree(self.ctx[3 : 3 + size], 3, pos, block)
        else:
            self.target.trunk(self.ctx[3 : 3 + size], 3)

    def _ensure(self, needed: int) -> None:
        """Grow the buffers when live parameters ask for more room than the generation began with."""
        if needed <= min(m.capacity for m in self.models):
            return
        for m in self.models:
            m.grow(needed)
        ctx = torch.zeros(self.target.capacity + PAD_SLACK, dtype=torch.long, device=self.device)
        ctx[: len(self.ctx)] = self.ctx
        self.ctx = ctx

