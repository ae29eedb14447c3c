"""The cost model's inputs, measured on the real prompt: c and the verification cost.

c = (one draft forward of 1 token) / (one target forward of 1 token), and
verify_cost = (one target forward of gamma + 1 tokens) / (one target forward of 1 token),
both after a prefilled cache of the prompt, medians over interleaved timings.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch

from app.engine.kv import forward, new_cache, rollback
from app.engine.kv import length as kv_length
from app.engine.static_kv import verify_size
from app.machine.clock import sync


@dataclass(frozen=True, slots=True)
class StepCosts:
    target_step: float  # seconds, 1-token target forward
    verify_step: float  # seconds, (gamma + 1)-token target forward
    draft_step: float | None  # seconds, 1-token draft forward (None without a draft model)

    @property
    def c(self) -> float:
        return self.draft_step / self.target_step if self.draft_step is not None else 0.0

    @property
    def verify_cost(self) -> float:
        return self.verify_step / self.target_step

    def to_json(self) -> dict:
        return asdict(self) | {"c": self.c, "verify_cost": self.verify_cost}


class _Timer:
    """Feeds n_new tokens after a cache holding ids[:-1], rolling back after each timing."""

    def __init__(self, model, ids: torch.Tensor, n_new: int) -> None:
        self.model, self.n_new = model, n_new
        self.device = next(model.parameters()).device
        ids = ids.to(self.device)
        self.cache = new_cache(model)
        forward(model, self.cache, ids[:-1], keep=1)
        self.held = kv_length(model, self.cache)
        self.fresh = torch.cat([ids[-1:], ids[-1:].repeat(n_new - 1)])
        self.times: list[float] = []
        self.once()  # warms up kernels and the allocator; not recorded
        self.times.clear()

    def once(self) -> None:
        sync(self.device)
        t0 = time.perf_counter()
        forward(self.model, self.cache, self.fresh, keep=self.n_new)
        sync(self.device)
        self.times.append(time.perf_counter() - t0)
        rollback(self.cache, self.held)


class _StaticTimer(_Timer):
    """The same timing through a StaticModel: the draft's step, or the target's verify padded as the engine pads it."""

    def __init__(self, static_model, ids: torch.Tensor, n_new: int, draft: bool = False) -> None:
        self.sm, self.n_new, self.device, self.draft = static_model, n_new, static_model.device, draft
        self.sm.resize(len(ids) + n_new)
        size = verify_size(n_new) if n_new > 1 else 1
        self.tokens = torch.cat([ids[-1:], ids[-1:].repeat(size - 1)]).to(self.device)
        self.start = len(ids) - 1
        self.sm.prefill(ids[:-1].to(self.device))
        self.times: list[float] = []
        self.once()
        self.times.clear()

    def once(self) -> None:
        sync(self.device)
        t0 = time.perf_counter()
        if self.draft:  # the draft's compiled 1-token step
            self.sm.step(self.tokens, self.start)
        else:  # the target's verify trunk (size 1: what target-only rounds run), head on the real rows
            self.sm.verify(self.tokens, self.start, self.n_new)
        sync(self.device)
        self.times.append(time.perf_counter() - t0)  # nothing to roll back: the next call overwrites


def measure_costs(target, draft, ids: torch.Tensor, gamma: int, reps: int = 9, static=None) -> StepCosts:
    """target/draft are models (draft may be None); ids is the tokenised prompt [L].

    The three timings take turns within each repetition, so a burst of machine noise lands on
    all of them rather than skewing one ratio; each is the median over `reps`. With `static` (a
    StaticDecoder) the steps are the static path's, compiled when it compiles.
    """
    timers: list[_Timer | _StaticTimer]
    if static is not None:
        ts = static.model(target, len(ids) + gamma + 1)
        timers = [_StaticTimer(ts, ids, 1), _StaticTimer(ts, ids, gamma + 1)]
        if draft is not None:
            timers.append(_StaticTimer(static.model(draft, len(ids) + 1), ids, 1, draft=True))
    else:
        timers = [_Timer(target, ids, 1), _Timer(target, ids, gamma + 1)]
        if draft is not None:
            timers.append(_Timer(draft, ids, 1))
    for _ in range(reps):
        for timer in timers:
            timer.once()
    medians = [statistics.median(t.times) for t in timers]
    return StepCosts(medians[0], medians[1], medians[2] if draft is not None else None)
