"""The one way a load-time timing is taken: warm-up, repetitions interleaved over the candidates, the
minimum kept, the device synchronised around each timed call, one clock (time.perf_counter). No Qt.

Other processes only ever add time, so the minimum over repetitions is the uncontended cost. The
candidates run in turn within each repetition (A B C, A B C, ...), never one after the other (A A A,
B B B), so a moment of load falls on all of them alike instead of deciding which one wins. The thread
count, the CPU linear path, v(n), the tree pass and the target-only step are all timed here; the
drafter probes run the real decoding loop, whose rounds are timed by the engine on this same clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

K = TypeVar("K", bound=Hashable)

now = time.perf_counter  # the clock: every load-time timing and every engine round use it


def sync(device: torch.device | None) -> None:
    """Wait for the device's queued work, so a timing ends when the work does (CPU: nothing queues)."""
    if device is None:
        return
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


@dataclass(frozen=True)
class Timing(Generic[K]):
    """Seconds per candidate: every kept repetition, and their minimum."""

    samples: dict[K, list[float]]

    @property
    def best(self) -> dict[K, float]:
        return {k: min(v) for k, v in self.samples.items()}


def time_interleaved(
    runs: Mapping[K, Callable[[], object]], *, reps: int, warmup: int = 1, device: torch.device | None = None,
    before: Callable[[K], object] | None = None, after: Callable[[K], object] | None = None,
) -> Timing[K]:
    """Time each `runs[k]()` `reps` times, the candidates interleaved, after `warmup` untimed passes (they warm
    the kernels, the allocator and a thread pool). before(k) and after(k) run untimed around each call:
    set a thread count, roll a cache back."""
    samples: dict[K, list[float]] = {k: [] for k in runs}
    for rep in range(warmup + reps):
        for k, run in runs.items():
            if before is not None:
                before(k)
            sync(device)
            t0 = now()
            run()
            sync(device)
            seconds = now() - t0
            if after is not None:
                after(k)
            if rep >= warmup:
                samples[k].append(seconds)
    return Timing(samples)
