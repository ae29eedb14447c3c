"""Start the model load once the window has painted, not while it paints.

The load begins by importing torch and transformers (~3 s, Python code holding the GIL). Started while the
window was still being built and painted, the two threads took turns on the GIL and the first paint came
1.6 s after Qt was up instead of 0.35 s (`speclens bench --startup`, 2 busy cores), while ready came no
sooner: the paint is Python callbacks too, so nothing overlaps."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

FALLBACK_MS = 1000  # a window shown but never painted (minimised, an odd platform) still loads


class _FirstPaint(QObject):
    """Watches the widget from its construction, so a paint before the first event-loop turn counts."""

    def __init__(self, widget: QWidget, callback: Callable[[], None]) -> None:
        super().__init__(widget)
        self.callback: Callable[[], None] | None = callback
        widget.installEventFilter(self)
        QTimer.singleShot(0, self, lambda: None if widget.isVisible() else self.fire())  # never shown: load at once
        QTimer.singleShot(FALLBACK_MS, self, self.fire)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Paint:
            QTimer.singleShot(0, self, self.fire)  # after this paint and the rest of its frame
        return False

    def fire(self) -> None:
        if self.callback is None:
            return
        callback, self.callback = self.callback, None
        widget = self.parent()
        if widget is not None:
            widget.removeEventFilter(self)
        callback()


def after_first_paint(widget: QWidget, callback: Callable[[], None]) -> None:
    """callback once widget has painted for the first time, or at the first event-loop turn when it is not
    shown by then (a window built for a test or a benchmark and never shown loads at once)."""
    _FirstPaint(widget, callback)
