"""One speculative round as data (`Round`), the round-runner interface (`Rounds`) and its dynamic-cache runner.

A runner owns the target's cache, the context on the device and the head/feature handling, and
exposes one `step(...) -> Round`: draft, verify in one target pass, accept, commit. `decode()` only
asks a runner for rounds and turns them into events; a drafter names its runner (`dynamic_rounds`),
so a new round kind (token trees: tree_rounds.TreeRounds) returns the same `Round` with its own
fields in `Round.extra`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import torch
from transformers import PreTrainedModel

from .acceptance import Verdict, accept
from .kv import forward, head, new_cache, rollback, splits_head, sync, trunk
from .sampling import DecodeParams, fit_vocab, logits_to_probs

if TYPE_CHECKING:
    from .drafters import Drafter


@dataclass(frozen=True, slots=True)
class Round:
    """What one round drafted, decided and cost. verdict.drafts[:n_accepted] then verdict.next_token are emitted."""

    verdict: Verdict
    draft_s: float  # seconds spent drafting
    verify_s: float  # seconds in the target pass plus the acceptance test
    extra: Mapping[str, object] = field(default_factory=dict)  # RoundEvent fields only this round kind fills


class Rounds(Protocol):
    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        """One round after the context ids_list (its newest token not yet through the target); gamma may be 0."""


class StaticCaches(Protocol):
    def begin(self, prompt: list[int], drafter: Drafter | None, generator: torch.Generator,
              max_new_tokens: int) -> Rounds: ...


def begin_rounds(target: PreTrainedModel, prompt: list[int], drafter: Drafter | None, generator: torch.Generator,
                 max_new_tokens: int, static: StaticCaches | None = None) -> Rounds:
    """The runner for one generation after `prompt`: on `static` caches when given, else the drafter's own
    runner on dynamic ones (`Drafter.dynamic_rounds`: chain or tree rounds)."""
    if static is not None:
        return static.begin(prompt, drafter, generator, max_new_tokens)
    if drafter is None:
        return DynamicRounds(target, prompt, None, generator)
    return drafter.dynamic_rounds(target, prompt, generator)


def extend_ids(ids: torch.Tensor, ids_list: list[int]) -> torch.Tensor:
    """The context on the device [L] grown by the tokens the last round emitted (ids_list's tail)."""
    if len(ids_list) <= len(ids):
        return ids
    return torch.cat([ids, torch.tensor(ids_list[len(ids) :], dtype=ids.dtype, device=ids.device)])


def head_probs(target: PreTrainedModel, hidden: torch.Tensor, params: DecodeParams, vocab_size: int) -> torch.Tensor:
    """Features [..., H] -> p [..., V]: the target's head, then the same transform as q."""
    return logits_to_probs(fit_vocab(head(target, hidden), vocab_size), params)


def start_runner(runner, target: PreTrainedModel, prompt: list[int], drafter: Drafter | None,
                 generator: torch.Generator) -> None:
    """The state every dynamic-cache runner starts from: the pair, the prompt on the device, an empty cache,
    and whether the drafter takes the target's features (refused where the head does not split off)."""
    runner.features = drafter is not None and drafter.wants_features
    if runner.features and not splits_head(target):
        raise ValueError("this target's logits are not a plain head over its features; a feature draft cannot run")
    runner.target, runner.drafter, runner.generator = target, drafter, generator
    runner.device = next(target.parameters()).device
    runner.ids = torch.tensor(prompt, dtype=torch.long, device=runner.device)
    runner.cache = new_cache(target)


class DynamicRounds:
    """Rounds on transformers' DynamicCache: the context grows on the device, the cache is cropped after a rejection.

    A drafter with `wants_features` gets the target's final-norm features of the positions a round
    keeps (the trunk runs once, the head on the last g + 1 rows), never those of rejected drafts.
    """

    def __init__(self, target: PreTrainedModel, prompt: list[int], drafter: Drafter | None,
                 generator: torch.Generator) -> None:
        start_runner(self, target, prompt, drafter, generator)

    def step(self, ids_list: list[int], gamma: int, params: DecodeParams, vocab_size: int) -> Round:
        self.ids = ids = extend_ids(self.ids, ids_list)
        t0 = time.perf_counter()
        if self.drafter is not None and gamma > 0:
            x, q = self.drafter.draft(ids, ids_list, gamma, params, vocab_size)
            x, q = x.to(self.device), q.to(self.device)
        else:
            x, q = ids.new_empty(0), torch.empty(0, vocab_size, device=self.device)
        sync(self.device)  # the draft's work is counted as drafting
        t1 = time.perf_counter()
        start = self.cache.get_seq_length()
        fresh = torch.cat([ids[start:], x])  # the uncached context, then every draft: one target pass
        g = len(x)
        if self.features:
            hidden = trunk(self.target, self.cache, fresh)  # [m, H]
            p = head_probs(self.target, hidden[-(g + 1) :], params, vocab_size)  # [g + 1, V]
        else:
            p = logits_to_probs(fit_vocab(forward(self.target, self.cache, fresh, keep=g + 1), vocab_size), params)
        verdict = accept(p, q, x, self.generator, params.greedy)
        # Both caches keep the context plus the accepted drafts; the new token is fed next round.
        kept = len(ids_list) + verdict.n_accepted
        rollback(self.cache, kept)
        if self.drafter is not None:
            self.drafter.commit(kept, hidden[: kept - start] if self.features else None, start)
        return Round(verdict, t1 - t0, time.perf_counter() - t1)
