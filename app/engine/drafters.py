"""The drafter interface (`Drafter`) and its model-based and model-free drafters, with their static-cache forms.

A drafter proposes up to gamma tokens with the full q they were drawn from. A round runner calls
`draft(...)`, verifies, then `commit(kept, features, start)` so no drafter state outlives a rejection.
`dynamic_rounds(...)` names that runner (a tree drafter, tree_drafters.py, drafts a tree instead and
names tree_rounds.TreeRounds); `static_form(decoder)` gives the same drafter on static caches (see
static.py), or a one-line reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import torch
from transformers import PreTrainedModel

from .kv import forward, new_cache, rollback
from .rounds import DynamicRounds, Rounds
from .sampling import DecodeParams, fit_vocab, logits_to_probs, sample
from .static import StaticRounds
from .static_kv import static_support

if TYPE_CHECKING:
    from .static import StaticDecoder, StaticDraft


class Drafter(Protocol):
    name: str
    wants_features: bool  # True: commit() receives the target's final-norm features of the kept positions

    def seed(self, seed: int) -> None:
        """Seed the drafter's own random stream (decode draws it from the main one)."""

    def begin(self) -> None:
        """Forget everything: a new sequence starts."""

    def draft(
        self, ids: torch.Tensor, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids [L] (context, last token included) -> (tokens [g] long, q [g, V] float32), g <= gamma."""

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        """After verification: the first `kept` positions are final. features [kept - start, H] of positions
        start..kept-1 when `wants_features`, else None."""

    def static_form(self, decoder: StaticDecoder) -> StaticDraft | str:
        """This drafter on static caches, or a one-line reason why it cannot run there."""

    def dynamic_rounds(self, target: PreTrainedModel, prompt: list[int], generator: torch.Generator) -> Rounds:
        """The runner of this drafter's rounds on dynamic caches: chain rounds (DynamicRounds) or tree rounds."""


def unsupported_on_static(drafter: Drafter) -> str:
    """The reason a drafter without a static form gives."""
    return f"the static cache does not support the {drafter.name} drafter yet"


def draft_chain(feed: Callable[[torch.Tensor], torch.Tensor], first: torch.Tensor, gamma: int, params: DecodeParams,
                vocab_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """Autoregressive drafting: feed(tokens [n]) -> logits [V_model] of the last one; first [n] is fed first.
    -> (x [gamma] long, q [gamma, V] float32), without a host sync."""
    tokens, qs = [], []
    step = first
    for _ in range(gamma):
        q_i = logits_to_probs(fit_vocab(feed(step), vocab_size), params)  # [V]
        x_i = sample(q_i, generator, params.greedy)  # []
        tokens.append(x_i)
        qs.append(q_i)
        step = x_i.view(1)
    return torch.stack(tokens), torch.stack(qs)


class ModelDrafter:
    """A causal LM sharing the target's vocabulary, drafting autoregressively with its own KV cache."""

    wants_features = False

    def __init__(self, model: PreTrainedModel, name: str = "draft model") -> None:
        self.model = model
        self.name = name
        self.device = next(model.parameters()).device
        self.generator = torch.Generator(device=self.device)
        self.cache = new_cache(model)

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def begin(self) -> None:
        self.cache = new_cache(self.model)

    def draft(self, ids, ids_list, gamma, params, vocab_size):
        # Catch up on whatever the cache lacks: the whole prompt at first, then the last
        # corrected/bonus token (and the last accepted draft when all were accepted).
        step = ids[self.cache.get_seq_length() :].to(self.device)
        feed = lambda tokens: forward(self.model, self.cache, tokens, keep=1)[-1]  # noqa: E731
        return draft_chain(feed, step, gamma, params, vocab_size, self.generator)

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        rollback(self.cache, kept)

    def static_form(self, decoder: StaticDecoder) -> StaticDraft | str:
        return static_support(self.model) or _StaticModelDraft(self)

    def dynamic_rounds(self, target, prompt, generator) -> Rounds:
        return DynamicRounds(target, prompt, self, generator)


class _StaticModelDraft:
    """A ModelDrafter on a static cache: one token per step, its drafts written into the session's buffer."""

    runner = StaticRounds

    def __init__(self, drafter: ModelDrafter) -> None:
        self.drafter = drafter
        self.models = (drafter.model,)
        self.held = 0  # draft cache positions that hold the context

    def begin(self, rounds: StaticRounds, prompt_len: int) -> None:
        self.cache = rounds.static_model(self.drafter.model)
        self.cache.prefill(rounds.ctx[: prompt_len - 1])
        self.held = prompt_len - 1

    def draft(self, rounds: StaticRounds, ids_list, gamma, params, vocab_size):
        n_ctx = len(ids_list)
        ctx = rounds.ctx
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

    def commit(self, kept: int) -> None:
        self.held = min(self.held, kept)


class PromptLookupDrafter:
    """Model-free drafting: continue the latest earlier occurrence of the context's last n-gram.

    q is one-hot on the proposed token; the min(1, p/q) rule keeps the output exact.
    """

    name = "prompt lookup"
    wants_features = False

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def seed(self, seed: int) -> None:
        pass  # deterministic

    def begin(self) -> None:
        pass

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        pass

    def propose(self, ids_list: list[int], gamma: int) -> list[int]:
        n_ctx = len(ids_list)
        for n in range(min(self.max_ngram, n_ctx - 1), self.min_ngram - 1, -1):
            tail = ids_list[-n:]
            # Latest match first: recent text is the likeliest to repeat.
            for start in range(n_ctx - n - 1, -1, -1):
                if ids_list[start : start + n] == tail:
                    return ids_list[start + n : start + n + gamma]
        return []

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

    def static_form(self, decoder: StaticDecoder) -> StaticDraft | str:
        return _StaticLookup(self)

    def dynamic_rounds(self, target, prompt, generator) -> Rounds:
        return DynamicRounds(target, prompt, self, generator)


class _StaticLookup:
    """Prompt lookup on the static path: the proposal is host data, so it needs no cache of its own."""

    models = ()
    runner = StaticRounds

    def __init__(self, drafter: PromptLookupDrafter) -> None:
        self.drafter = drafter

    def begin(self, rounds: StaticRounds, prompt_len: int) -> None:
        pass

    def draft(self, rounds: StaticRounds, ids_list, gamma, params, vocab_size):
        return self.drafter.draft_on(rounds.device, ids_list, gamma, vocab_size)

    def commit(self, kept: int) -> None:
        pass
