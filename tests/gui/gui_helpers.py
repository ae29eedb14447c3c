"""Helpers shared by the GUI tests."""

from __future__ import annotations

import threading

from PySide6.QtCore import Qt

from app.engine import FinishedEvent, RoundEvent, TokenEvent


class Recorder:
    """Every event the worker emits, collected in the worker thread (a direct call, no GUI involved)."""

    def __init__(self, worker) -> None:
        self.lock = threading.Lock()
        self.tokens: list[TokenEvent] = []
        self.rounds: list[RoundEvent] = []
        self.finished: list[FinishedEvent] = []
        direct = Qt.ConnectionType.DirectConnection  # runs in the engine thread, as the events happen
        worker.events.connect(self._batch, direct)
        worker.finished.connect(self._finished, direct)

    def _batch(self, batch) -> None:
        with self.lock:
            for event in batch:
                (self.tokens if isinstance(event, TokenEvent) else self.rounds).append(event)

    def _finished(self, event) -> None:
        with self.lock:
            self.finished.append(event)

    def reset(self) -> None:
        with self.lock:
            self.tokens.clear()
            self.rounds.clear()
            self.finished.clear()


def send(qtbot, win, text: str, timeout: int = 60_000) -> None:
    """Type a message, press Ctrl+Enter's action, wait until the answer is complete and rendered."""
    win.input.setPlainText(text)
    win.send()
    assert win.generating
    qtbot.waitUntil(lambda: not win.generating, timeout=timeout)
