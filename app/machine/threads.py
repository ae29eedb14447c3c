"""CPU threads for decoding: the count whose decode step measures fastest here, chosen at load and cached.

A decode step of a small model is some 600 short kernels. With OMP_WAIT_POLICY=PASSIVE (app/__init__.py:
spinning threads starve a busy machine), the other threads sleep between kernels, and on a 2-core
AMD EPYC one step of the embedded model took 41 ms at 2 threads against 25 ms at 1 (speclens bench,
quiet machine, 2026-12-01; the wake-ups are the likely cause, not isolated). A larger model or more cores can go the other way, so
the count is measured, never assumed: a one-token step after a short prefill, interleaved over the
candidates, minimum of REPS (clock.time_interleaved), kept in the model's machine profile
(machine_profile.py). The choice is process-wide (torch's intra-op pool) and made once per
load; the count never changes inside a generation, so target-only and speculative rounds run alike.
Pinned counts win: OMP_NUM_THREADS set by the user, or `pin(n)` (bench --threads, distill --threads).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from app.machine import load as machine_load
from app.machine.clock import time_interleaved
from app.machine.load import Load

if TYPE_CHECKING:  # transformers' model classes stay out of a light native launch
    from transformers import PreTrainedModel

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
    load: Load | None = None  # the machine while the counts were timed; None when nothing was timed


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


def pinned() -> str | None:
    """Why the count is not chosen by timing ("pinned", "one core"), or None when it is."""
    if _pinned is not None or os.environ.get("OMP_NUM_THREADS"):
        return "pinned"
    return "one core" if DEFAULT == 1 else None


def possible() -> list[int]:
    """Every count a load may run with: the pinned one, else the candidates choose_threads times."""
    return [torch.get_num_threads()] if pinned() is not None else candidates(DEFAULT)


def setting() -> str:
    """The thread setting a timing depends on, for the profile's key: "auto", or the count in force."""
    return "auto" if pinned() is None else str(torch.get_num_threads())


def choose_threads(model: nn.Module, known: ThreadChoice | None = None) -> ThreadChoice:
    """Set and return the fastest thread count for `model`'s decode step on this CPU. known: the choice the
    machine profile holds, set again as it is (the profile decides when it is stale)."""
    if (why := pinned()) is not None:
        current = torch.get_num_threads()
        _use(model, current)
        return ThreadChoice(current, {}, False, f"{current} thread{'s' * (current > 1)} ({why})")
    counts = candidates(DEFAULT)
    if known is not None and known.threads in counts:
        _use(model, known.threads)
        return ThreadChoice(known.threads, known.timings, True, known.reason, known.load)
    with machine_load.watch() as watch:
        timings = time_threads(model, counts)
    best = min(timings, key=timings.__getitem__)
    others = ", ".join(f"{n}: {ms:.1f} ms" for n, ms in timings.items())
    reason = f"{best} thread{'s' * (best > 1)}: fastest decode step here ({others})"
    _use(model, best)
    return ThreadChoice(best, timings, False, reason, watch.load)


def _use(model: nn.Module, count: int) -> None:
    """Run the model's steps on `count` threads. A native model's are the kernel's own (native.set_threads),
    and torch keeps one for the round's vocabulary work: its OpenMP workers, woken between passes, made the
    next pass 1.2 ms slower (docs/native-kernels.md)."""
    from app.native import set_threads
    from app.native.model import is_native

    if is_native(model):
        set_threads(count)
        torch.set_num_threads(1)
    else:
        set_threads(None)
        torch.set_num_threads(count)


@torch.inference_mode()
def time_threads(model: PreTrainedModel, counts: list[int]) -> dict[int, float]:
    """ms of one decode step at each thread count (interleaved, minimum of REPS; the first round warms
    each count's pool)."""
    from app.engine.kv import forward, new_cache, rollback

    device = next(model.parameters()).device
    ids = torch.arange(PREFILL, device=device) % model.config.vocab_size
    cache = new_cache(model)
    forward(model, cache, ids, 1)
    runs = {n: lambda: forward(model, cache, ids[-1:], 1) for n in counts}
    timing = time_interleaved(runs, reps=REPS, device=device, before=lambda n: _use(model, n),
                              after=lambda _n: rollback(cache, PREFILL))
    return {n: round(s * 1e3, 2) for n, s in timing.best.items()}
