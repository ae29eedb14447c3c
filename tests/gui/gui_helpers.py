"""Helpers shared by the GUI tests."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import Qt

from app.engine import DecodeParams, FinishedEvent, RoundEvent, TokenEvent
from app.engine.policy import VerifyCosts

CPU = VerifyCosts((0.050, 0.055, 0.0585, 0.063, 0.0665, 0.072, 0.078, 0.083, 0.089))  # v(n) of a CPU, injected


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
    win.chat_flow.send()
    assert win.model.generating
    qtbot.waitUntil(lambda: not win.model.generating, timeout=timeout)


def slow_params(window, delay=0.03):
    """The engine reads params once per round: a delay there makes rounds slow enough to interact with."""
    fast = window.controls.params

    def params() -> DecodeParams:
        time.sleep(delay)
        return fast()

    return params


def start_long_answer(window, monkeypatch, text: str, max_new: int):
    """Send text with EOS disabled and slowed rounds, so the answer is still running when the test acts."""
    monkeypatch.setattr(type(window.model.target), "stop_token_ids", property(lambda self: ()))
    window.controls.max_new.setValue(max_new)
    monkeypatch.setattr(window.controls, "params", slow_params(window))
    window.input.setPlainText(text)
    window.chat_flow.send()
    return window.recorder
