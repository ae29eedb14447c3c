"""One real run: the embedded default target with its self-draft, through the whole window."""

from __future__ import annotations

import time

import pytest
from gui_helpers import Recorder
from PySide6.QtCore import QTimer

pytestmark = pytest.mark.slow


class Heartbeat:
    """A 5 ms timer on the GUI thread; the longest gap between ticks is the worst stall."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.longest = 0.0
        self.timer = QTimer(interval=5, timeout=self.tick)
        self.timer.start()

    def tick(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, now - self.last)
        self.last = now


def test_default_pair_streams_statuses_that_match_the_engine(qtbot, data_dir):
    from app.gui.main_window import MainWindow

    window = MainWindow(target_spec="default", draft_spec="trained")
    qtbot.addWidget(window)
    window.show()
    # Loading also times the drafters on this machine the first time (cached afterwards).
    qtbot.waitUntil(lambda: window.model.drafter is not None or window.status.banner.isVisibleTo(window), timeout=360_000)
    assert window.model.drafter is not None, window.status.banner.text()
    recorder = Recorder(window.worker)
    window.controls.max_new.setValue(24)
    window.input.setPlainText("Name three colours.")
    beat = Heartbeat()
    window.chat_flow.send()
    qtbot.waitUntil(lambda: not window.model.generating, timeout=180_000)
    beat.timer.stop()
    emitted = [t for t in recorder.tokens if t.emitted and t.text.strip("\n")]
    assert emitted and [(t.text, t.status.value) for t in emitted] == window.chat.statuses_shown(1)
    assert window.conversation.messages[1].text == window.model.target.tokenizer.decode(
        recorder.finished[-1].token_ids, skip_special_tokens=True
    )
    print(f"longest GUI-thread stall: {beat.longest * 1000:.1f} ms over {len(recorder.rounds)} rounds")
