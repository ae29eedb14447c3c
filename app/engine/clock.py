"""A round's draft and verify spans, timed one way on every cache: CUDA events on a GPU (read after the
round's one sync, so timing adds none), the wall clock elsewhere (where every call has run when it returns)."""

from __future__ import annotations

import time

import torch


class Clock:
    """start() before drafting, mark() when the verify pass is queued, mark() just before the round's sync;
    spans() after the round -> (draft seconds, verify seconds)."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if self.cuda else []
        self.times: list[float] = []

    def start(self) -> None:
        self.times = []
        self.mark()

    def mark(self) -> None:
        if self.cuda:
            if len(self.times) < len(self.events):
                self.events[len(self.times)].record()
            self.times.append(0.0)
        else:
            self.times.append(time.perf_counter())

    def spans(self) -> tuple[float, float]:
        if self.cuda:  # the events completed before the packed transfer returned
            e = self.events
            return e[0].elapsed_time(e[1]) / 1e3, e[1].elapsed_time(e[2]) / 1e3
        t = self.times
        return t[1] - t[0], time.perf_counter() - t[1]
