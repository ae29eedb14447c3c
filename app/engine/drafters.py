"""Chain drafters (protocols.Drafter): a draft model with its own KV cache, and prompt lookup; a draft
model's form on static caches.

A drafter proposes up to gamma tokens with the full q they were drawn from. A round calls `draft(...)`,
verifies, then `commit(kept, features, start)` so no drafter state outlives a rejection; `static_form()`
gives the same drafter on static caches (see static.py), or raises Unsupported; `tree_form(budget, depth)`
the same draft proposing token trees (tree_drafters.py); `controller(...)` its live γ (policy.AutoGamma).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal

import torch

from .kv import backend_for
from .policy.live import AutoGamma
from .protocols import Drafter, Unsupported
from .sampling import DecodeParams, fit_vocab, logits_to_probs, on_subset, sample
from .static_kv import static_support
from .tree_drafters import TREE_TOP_K, LookupTreeDrafter, ModelTreeDrafter

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from .policy.cost import DrafterProfile, VerifyCosts
    from .protocols import LiveController, StaticBuffers, StaticStep

__all__ = ["Drafter", "ModelDrafter", "PromptLookupDrafter", "chain_controller", "draft_chain", "subset_head",
           "unsupported_on_static"]


def chain_controller(drafter: object, profile: DrafterProfile, verify: VerifyCosts, gamma_max: int) -> LiveController:
    """A chain drafter's live controller: γ re-chosen between rounds from its live α, c and verify cost."""
    return AutoGamma(profile, verify, gamma_max)


def unsupported_on_static(drafter: Drafter) -> Unsupported:
    """The refusal a drafter without a static form raises."""
    return Unsupported(f"the static cache does not support the {drafter.name} drafter yet")


def draft_chain(feed: Callable[[torch.Tensor], torch.Tensor], first: torch.Tensor, gamma: int, params: DecodeParams,
                vocab_size: int, generator: torch.Generator,
                vocab_ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Autoregressive drafting: feed(tokens [n]) -> logits [V_model] of the last one; first [n] is fed first.
    -> (x [gamma] long, q [gamma, V] float32), without a host sync.
    vocab_ids [K]: the logits are those of these tokens only (a head over a subset): q is the same transform
    over them, drawn from them, and 0 at every other token (sampling.on_subset)."""
    tokens, qs = [], []
    step = first
    for _ in range(gamma):
        if vocab_ids is None:
            q_i = logits_to_probs(fit_vocab(feed(step), vocab_size), params)  # [V]
            x_i = sample(q_i, generator, params.greedy)  # []
        else:
            q_k = logits_to_probs(feed(step), params)  # [K]
            x_i = vocab_ids[sample(q_k, generator, params.greedy)]
            q_i = on_subset(q_k, vocab_ids, vocab_size)
        tokens.append(x_i)
        qs.append(q_i)
        step = x_i.view(1)
    return torch.stack(tokens), torch.stack(qs)


class ModelDrafter:
    """A causal LM sharing the target's vocabulary, drafting autoregressively with its own KV cache.

    vocab_ids [K]: the model's head holds only these tokens' rows (its logits are [K]: `subset_head`, or the
    native model's own reduced head), so each step reads K rows instead of the vocabulary's; q is 0 outside
    them (FR-Spec's draft vocabulary). Chain drafting only: its static and tree forms are not built yet.
    """

    wants_features = False
    proposes: Literal["chain"] = "chain"

    def __init__(self, model: PreTrainedModel, name: str = "draft model", vocab_ids: torch.Tensor | None = None) -> None:
        self.model = model
        self.name = name
        self.backend = backend_for(model)
        self.device = self.backend.device
        self.vocab_ids = None if vocab_ids is None else vocab_ids.to(device=self.device, dtype=torch.long)
        self.generator = torch.Generator(device=self.device)
        self.cache = self.backend.new_cache()

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def begin(self) -> None:
        self.cache = self.backend.new_cache()

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        # Catch up on whatever the cache lacks: the whole prompt at first, then the last
        # corrected/bonus token (and the last accepted draft when all were accepted).
        step = ids[self.backend.length(self.cache) :].to(self.device)
        feed = lambda tokens: self.backend.forward(self.cache, tokens, keep=1)[-1]  # noqa: E731
        return draft_chain(feed, step, gamma, params, vocab_size, self.generator, self.vocab_ids)

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        self.backend.rollback(self.cache, kept)

    def static_form(self) -> _StaticModelDraft:
        if self.vocab_ids is not None:
            raise Unsupported("the static cache does not support a draft over a token subset yet")
        reason = static_support(self.model)
        if reason is not None:
            raise Unsupported(reason)
        return _StaticModelDraft(self)

    def tree_form(self, budget: int, depth: int) -> ModelTreeDrafter | None:
        """EAGLE-2's expansion with one pass a level, on a cache of its own; None over a token subset (not yet)."""
        if self.vocab_ids is not None:
            return None
        return ModelTreeDrafter(self.model, budget, depth, TREE_TOP_K, name=f"{self.name} tree", chain=self)

    def chain_form(self) -> ModelDrafter:
        return self

    controller = chain_controller


def subset_head(model: PreTrainedModel, vocab_ids: torch.Tensor) -> PreTrainedModel:
    """A transformers causal LM whose head holds only the rows vocab_ids [K] of its own, sliced once into a
    [K, H] matrix: its logits are [K], each the full head's logit of that token. Shares every other module
    with `model` (which it leaves as it was)."""
    head = model.get_output_embeddings()
    rows = head.weight.detach()[vocab_ids.to(head.weight.device)].clone()  # [K, H]
    reduced = torch.nn.Linear(rows.shape[1], rows.shape[0], bias=head.bias is not None, device="meta")
    reduced.weight = torch.nn.Parameter(rows, requires_grad=False)
    if head.bias is not None:
        reduced.bias = torch.nn.Parameter(head.bias.detach()[vocab_ids.to(head.bias.device)].clone(), requires_grad=False)
    clone = copy.copy(model)
    clone._modules = dict(model._modules)  # its own module table: the head set below is the clone's alone
    clone.set_output_embeddings(reduced)
    return clone


class _StaticModelDraft:
    """A ModelDrafter on a static cache: one token per step, its drafts written into the session's buffer."""

    def __init__(self, drafter: ModelDrafter) -> None:
        self.drafter = drafter
        self.models = (drafter.model,)
        self.held = 0  # draft cache positions that hold the context

    def prepare(self, buffers: StaticBuffers, prompt_len: int) -> None:
        self.cache: StaticStep = buffers.static_model(self.drafter.model)
        self.cache.prefill(buffers.ctx[: prompt_len - 1])
        self.held = prompt_len - 1

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        n_ctx = len(ids_list)
        ctx = ids  # the buffer's context: ctx[:n_ctx]
        for pos in range(self.held, n_ctx - 1):  # catch up: the last accepted draft after a full accept
            self.cache.step(ctx[pos : pos + 1], pos)
        pos = [n_ctx - 1]

        def feed(tokens: torch.Tensor) -> torch.Tensor:
            logits = self.cache.step(tokens, pos[0])
            pos[0] += 1
            return logits

        x, q = draft_chain(feed, ctx[n_ctx - 1 : n_ctx], gamma, params, vocab_size, self.drafter.generator)
        self.held = n_ctx + gamma - 1  # x_gamma itself was never fed
        return x, q

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        self.held = min(self.held, kept)


def before_any(tokens: list[int], never: frozenset[int]) -> list[int]:
    """tokens up to (not including) the first one in `never`."""
    for i, token in enumerate(tokens):
        if token in never:
            return tokens[:i]
    return tokens


class NgramStarts:
    """The latest two starts of every n-gram (n in `sizes`) of one growing context, brought up to date with
    the tokens added since the last call: a round's lookup then costs a few dictionary reads instead of a
    scan of the whole context (0.10 ms a round at 335 tokens on the embedded model's chat, where its whole
    step is 2.8 ms, and growing with the answer)."""

    def __init__(self, sizes: Iterable[int]) -> None:
        self.sizes = tuple(sizes)
        self.ids: list[int] = []
        self.last: dict[tuple[int, ...], int] = {}
        self.previous: dict[tuple[int, ...], int] = {}

    def earlier(self, ids_list: list[int], n: int) -> int | None:
        """The latest start of the context's last n tokens before that suffix's own, if any."""
        self._update(ids_list)
        tail = tuple(ids_list[-n:])
        last = self.last.get(tail)
        return self.previous.get(tail) if last == len(ids_list) - n else last

    def _update(self, ids_list: list[int]) -> None:
        known = len(self.ids)
        if known > len(ids_list) or ids_list[:known] != self.ids:  # another context: a new answer, a cut
            self.ids, self.last, self.previous, known = [], {}, {}, 0
        for end in range(known, len(ids_list)):
            for n in self.sizes:
                if end + 1 >= n:
                    key = tuple(ids_list[end + 1 - n : end + 1])
                    if key in self.last:
                        self.previous[key] = self.last[key]
                    self.last[key] = end + 1 - n
        self.ids.extend(ids_list[known:])


class PromptLookupDrafter:
    """Model-free drafting: continue the latest earlier occurrence of the context's last n-gram.

    q is one-hot on the proposed token; the min(1, p/q) rule keeps the output exact. `never`: tokens it
    never proposes (a continuation stops before one): the special tokens a chat template places, which
    the target does not emit inside an answer, so proposing them only wastes the verify rows.
    """

    name = "prompt lookup"
    wants_features = False
    proposes: Literal["chain"] = "chain"
    models = ()  # its static form is itself: the proposal is host data, it needs no cache of its own

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1, never: Iterable[int] = ()) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.never = frozenset(never)
        self.starts = NgramStarts(range(min_ngram, max_ngram + 1))

    def seed(self, seed: int) -> None:
        pass  # deterministic

    def begin(self) -> None:
        pass

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        pass

    def propose(self, ids_list: list[int], gamma: int) -> list[int]:
        return self.match(ids_list, gamma)[1]

    def match(self, ids_list: list[int], gamma: int) -> tuple[int, list[int]]:
        """(n, continuation): the longest n-gram suffix of the context found earlier in it, and up to γ tokens
        that followed it there; (0, []) when none is found."""
        for n in range(min(self.max_ngram, len(ids_list) - 1), self.min_ngram - 1, -1):
            start = self.starts.earlier(ids_list, n)  # the latest match: recent text is the likeliest to repeat
            if start is not None:
                return n, before_any(ids_list[start + n : start + n + gamma], self.never)
        return 0, []

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        return self.draft_on(ids.device, ids_list, gamma, vocab_size)

    def draft_on(self, device: torch.device, ids_list: list[int], gamma: int, vocab_size: int):
        """The proposal as x [g] on `device` (copied without waiting on it) and its one-hot q [g, V]."""
        host = torch.tensor(self.propose(ids_list, gamma), dtype=torch.long)
        if device.type == "cuda":
            host = host.pin_memory()
        x = host.to(device, non_blocking=True)
        q = torch.zeros(len(host), vocab_size, dtype=torch.float32, device=device)
        return x, q.scatter_(-1, x[:, None], 1.0)

    def static_form(self) -> PromptLookupDrafter:
        return self

    def prepare(self, buffers: StaticBuffers, prompt_len: int) -> None:
        pass

    def tree_form(self, budget: int, depth: int) -> LookupTreeDrafter:
        """Every earlier match of the context's suffix, merged into a trie."""
        return LookupTreeDrafter(budget, depth, self.max_ngram, self.min_ngram, self.never, chain=self)

    def chain_form(self) -> PromptLookupDrafter:
        return self

    controller = chain_controller
