"""Observers: a list of callbacks a model calls when something changed, in the thread that changed it.

Thread-agnostic on purpose: the window connects callbacks that only touch widgets from the GUI thread
(the model is changed there), and adapts them to Qt itself; a server connects plain functions."""

from __future__ import annotations

from collections.abc import Callable


class Observers:
    def __init__(self) -> None:
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> None:
        self._callbacks.append(callback)

    def disconnect(self, callback: Callable) -> None:
        self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        for callback in list(self._callbacks):
            callback(*args)
