"""The round gate: the step-through's pause. It holds the engine between rounds by wrapping the params
callable decode() reads at the start of every round, so pausing needs no engine change. Thread-safe: the
GUI sets it, the engine thread waits on it. No Qt."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.params import DecodeParams


class RoundGate:
    """Holds the engine between rounds while paused; a step lets exactly one more round through."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._paused = False
        self._credits = 0
        self.waiting = False  # the engine thread is held at the gate (tests and the status line read it)

    @property
    def paused(self) -> bool:
        return self._paused

    def set_paused(self, paused: bool) -> None:
        with self._cond:
            self._paused, self._credits = paused, 0
            self._cond.notify_all()

    def step(self) -> None:
        with self._cond:
            self._credits += 1
            self._cond.notify_all()

    def wrap(self, params: Callable[[], DecodeParams], cancel: threading.Event) -> GatedParams:
        """The params callable for one answer's decode(), held here between its rounds."""
        return GatedParams(self, params, cancel)

    def hold(self, cancel: threading.Event) -> None:
        """Wait while paused, until a step's credit, a resume or `cancel` lets one round through."""
        with self._cond:
            while self._paused and self._credits == 0 and not cancel.is_set():
                self.waiting = True
                self._cond.wait(0.1)
            self.waiting = False
            if self._paused and self._credits:
                self._credits -= 1


class GatedParams:
    """decode()'s params callable for one answer: read once to set up (not held), then held at the gate
    before every round. `params` is the answer's own, ungated."""

    def __init__(self, gate: RoundGate, params: Callable[[], DecodeParams], cancel: threading.Event) -> None:
        self.gate, self.params, self.cancel = gate, params, cancel
        self._setup = True

    def __call__(self) -> DecodeParams:
        if self._setup:
            self._setup = False
        else:
            self.gate.hold(self.cancel)
        return self.params()
