"""The cost model's inputs, measured on the real prompt: c and the verification cost.

c = (one draft forward of 1 token) / (one target forward of 1 token), and
verify_cost = (one target forward of gamma + 1 tokens) / (one target forward of 1 token),
both after a prefilled cache of the prompt, medians over `reps` timings.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch

from app.engine.kv import forward, new_cache, rollback


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


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def forward_seconds(model, ids: torch.Tensor, n_new: int, reps: int) -> float:
    """Median time of feeding n_new tokens after a cache holding ids[:-1]."""
    device = next(model.parameters()).device
    ids = ids.to(device)
    cache = new_cache(model)
    forward(model, cache, ids[:-1], keep=1)
    held = cache.get_seq_length()
    fresh = torch.cat([ids[-1:], ids[-1:].repeat(n_new - 1)])
    times = []
    for _ in range(reps + 1):  # the first call warms up kernels and allocator
        _sync(device)
        t0 = time.perf_counter()
        forward(model, cache, fresh, keep=n_new)
        _sync(device)
        times.append(time.perf_counter() - t0)
        rollback(cache, held)
    return statistics.median(times[1:])


def measure_costs(target, draft, ids: torch.Tensor, gamma: int, reps: int = 7) -> StepCosts:
    """target/draft are models (draft may be None); ids is the tokenised prompt [L]."""
    return StepCosts(
        target_step=forward_seconds(target, ids, 1, reps),
        verify_step=forward_seconds(target, ids, gamma + 1, reps),
        draft_step=forward_seconds(draft, ids, 1, reps) if draft is not None else None,
    )
