"""Plays a recorded run through the same three signals the GenerationWorker emits (baseline,
events, finished), so the window renders a replay with exactly the code that renders a live
answer. Time is the recording's own: each round arrives when it arrived live, scaled by the speed."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer, Signal

from app.recording import Run

SPEEDS = (0.5, 1.0, 2.0, 4.0)


class Player(QObject):
    baseline = Signal(float)
    events = Signal(list)
    finished = Signal(object)
    ended_early = Signal()  # the run has no FinishedEvent: the recording was cut off
    position = Signal(int, int)  # rounds played, rounds in the run

    def __init__(self, run: Run, speed: float = 1.0, parent=None) -> None:
        super().__init__(parent)
        self.run = run
        self.speed = speed
        self.items: list[tuple[float, str, object]] = []
        if run.baseline is not None:
            self.items.append((run.baseline_t, "baseline", run.baseline))
        self.items += [(step.t, "events", list(step.events)) for step in run.steps]
        self.items.append((run.finished_t or run.duration, "finished", run.finished))
        self.next = 0  # index of the next item to emit
        self.clock = 0.0  # recording seconds played so far
        self.playing = False
        self._since = 0.0  # monotonic time the clock last moved from
        self.rounds_played = 0
        self.timer = QTimer(self, singleShot=True, timeout=self._due)

    @property
    def done(self) -> bool:
        return self.next >= len(self.items)

    @property
    def rounds(self) -> int:
        return len(self.run.steps)

    def now(self) -> float:
        """Recording seconds elapsed, for running clocks."""
        if self.playing:
            return self.clock + (time.monotonic() - self._since) * self.speed
        return self.clock

    def play(self) -> None:
        if self.done or self.playing:
            return
        self.playing = True
        self._since = time.monotonic()
        self._schedule(self.clock)

    def pause(self) -> None:
        if self.playing:
            self.clock = self.now()
            self.playing = False
            self.timer.stop()

    def toggle(self) -> None:
        self.pause() if self.playing else self.play()

    def set_speed(self, speed: float) -> None:
        playing = self.playing
        self.pause()
        self.speed = speed
        if playing:
            self.play()

    def step(self) -> None:
        """Pause, then deliver everything up to and including the next round."""
        self.pause()
        while not self.done:
            kind = self.items[self.next][1]
            self._emit_next()
            if kind == "events":
                break
        if not self.done and self.items[self.next][1] == "finished":
            self._emit_next()  # the last round also ends the answer

    def finish(self) -> None:
        """Deliver the rest at once (Stop during a replay, or a test that needs the end)."""
        self.pause()
        while not self.done:
            self._emit_next()

    def _schedule(self, now: float | None = None) -> None:
        if self.done:
            self.playing = False
            return
        now = self.now() if now is None else now
        wait = max(0.0, self.items[self.next][0] - now) / self.speed
        self.timer.start(int(wait * 1000))

    def _due(self) -> None:
        self.clock = max(self.now(), self.items[self.next][0])
        self._since = time.monotonic()
        self._emit_next()
        self._schedule()

    def _emit_next(self) -> None:
        t, kind, payload = self.items[self.next]
        self.next += 1
        self.clock = max(self.clock, t)
        if kind == "baseline":
            self.baseline.emit(payload)
        elif kind == "events":
            self.rounds_played += 1
            self.events.emit(payload)
            self.position.emit(self.rounds_played, self.rounds)
        elif payload is None:
            self.playing = False
            self.ended_early.emit()
        else:
            self.playing = False
            self.finished.emit(payload)
