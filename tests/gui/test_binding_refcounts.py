"""The Qt binding must not leak or drop references on the calls the app makes thousands of times.

PySide6 6.12.0 drops a reference to None in every string setter; under Python 3.11 (None is not
immortal) a long chat then aborts the process with "none_dealloc". pyproject.toml excludes it; this
test fails on any binding with that bug."""

from __future__ import annotations

import sys

import pyqtgraph as pg
from PySide6.QtWidgets import QLabel, QPushButton

CALLS = 1000


def _none_refs_after(call, calls: int = CALLS) -> int:
    call()  # first call may cache wrappers
    before = sys.getrefcount(None)
    for _ in range(calls):
        call()
    return sys.getrefcount(None) - before


def test_string_setters_keep_none_alive(qtbot):
    label, button = QLabel(), QPushButton()
    qtbot.addWidget(label)
    qtbot.addWidget(button)
    for call in (lambda: label.setText("token"), lambda: label.setToolTip("why"),
                 lambda: button.setText("Send"), lambda: label.setStyleSheet(""),
                 lambda: label.setEnabled(True)):
        assert _none_refs_after(call) > -CALLS // 2


def test_plot_widgets_keep_none_alive(qtbot):
    def plot():
        widget = pg.PlotWidget()  # pyqtgraph's own set-up calls dozens of setters
        widget.deleteLater()

    assert _none_refs_after(plot, 20) > -20  # the buggy binding drops over a hundred per plot
