"""CPU threads for decoding: the count whose decode step measures fastest here, chosen at load and cached.

A decode step of a small model is some 600 short kernels. With OMP_WAIT_POLICY=PASSIVE (app/__init__.py:
spinning threads starve a busy machine), the other threads sleep between kernels, and on a 2-core
AMD EPYC one step of the embedded model took 41 ms at 2 threads against 25 ms at 1 (speclens bench,
quiet machine, 2026-12-01; the wake-ups are the likely cause, not isolated). A larger model or more cores can go the other way, so
the count is measured, never assumed: a one-token step after a short prefill, interleaved over the
candidates, minimum of REPS. The choice is process-wide (torch's intra-op pool) and made once per
load; the count never changes inside a generation, so target-only and speculative rounds run alike.
Pinned counts win: OMP_NUM_THREADS set by the user, or `pin(n)` (bench --threads, distill --threads).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import torch
from torch import nn

from . import cost_cache

PREFILL = 64  # context of the timed step: a short chat's
REPS = 5
DEFAULT = torch.get_num_threads()  # torch's own count (the physical cores), before any choice changed it
_pinned: int | None = None


@dataclass(frozen=True)
class ThreadChoice:
    threads: int
    timings: dict  # threads -> ms of one step
    cached: bool
    reason: str


def pin(threads: int) -> None:
    """Use exactly `threads` from now on: load-time choices keep it."""
    global _pinned
    _pinned = threads
    torch.set_num_threads(threads)


def candidates(default: int) -> list[int]:
    """1, then doubling up to torch's default (the physical cores), and the default itself."""
    counts, n = [], 1
    while n < default:
        counts.append(n)
        n *= 2
    return [*counts, default]


def choose_threads(model: nn.Module, use_cache: bool = True) -> ThreadChoice:
    """Set and return the fastest thread count for `model`'s decode step on this CPU."""
    if _pinned is not None or os.environ.get("OMP_NUM_THREADS") or DEFAULT == 1:
        current = torch.get_num_threads()
        why = "pinned" if _pinned is not None or os.environ.get("OMP_NUM_THREADS") else "one core"
        return ThreadChoice(current, {}, False, f"{current} thread{'s' * (current > 1)} ({why})")
    torch.set_num_threads(DEFAULT)  # the key's thread count: the same for every load
    key = cost_cache.key_of(["threads", *cost_cache.machine_parts(), cost_cache.model_fingerprint(model)])
    if use_cache and (hit := cost_cache.read(key)) is not None and isinstance(hit.get("threads"), int):
        torch.set_num_threads(hit["threads"])
        return ThreadChoice(hit["threads"], hit.get("timings", {}), True, hit.get("reason", ""))
    timings = time_threads(model, candidates(DEFAULT))
    best = min(timings, key=timings.__getitem__)
    others = ", ".join(f"{n}: {ms:.1f} ms" for n, ms in timings.items())
    reason = f"{best} thread{'s' * (best > 1)}: fastest decode step here ({others})"
    torch.set_num_threads(best)
    if use_cache:
        cost_cache.write(key, {"kind": "threads", "threads": best, "timings": timings, "reason": reason})
    return ThreadChoice(best, timings, False, reason)


@torch.inference_mode()
def time_threads(model: nn.Module, counts: list[int]) -> dict[int, float]:
    """ms of one decode step at each thread count (interleaved, minimum of REPS)."""
    from app.engine.kv import forward, new_cache, rollback

    device = next(model.parameters()).device
    ids = torch.arange(PREFILL, device=device) % model.config.vocab_size
    cache = new_cache(model)
    forward(model, cache, ids, 1)
    best = {n: float("inf") for n in counts}
    for _ in range(REPS + 1):  # the first round warms each count's pool
        for n in counts:
            torch.set_num_threads(n)
            t0 = time.perf_counter()
            forward(model, cache, ids[-1:], 1)
            best[n] = min(best[n], (time.perf_counter() - t0) * 1e3)
            rollback(cache, PREFILL)
    return {n: round(ms, 2) for n, ms in best.items()}
