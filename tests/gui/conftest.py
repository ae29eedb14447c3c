"""GUI test fixtures: a MainWindow on the tiny model pair, with history and settings in tmp_path."""

from __future__ import annotations

import pytest
from gui_helpers import Recorder


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """History database and QSettings file live here (the app derives both from SPECLENS_DATA_DIR)."""
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def window(qtbot, data_dir, tiny_pair_dirs):
    from app.gui.main_window import MainWindow

    target, draft = tiny_pair_dirs
    win = MainWindow(target_spec=str(target), draft_spec=str(draft))
    qtbot.addWidget(win)  # closed at teardown: the engine thread is shut down through closeEvent
    win.show()
    qtbot.waitUntil(lambda: win.target is not None and win.drafter is not None, timeout=60_000)
    win.recorder = Recorder(win.worker)
    win.controls.gamma.setValue(4)  # hand-set: token statuses under a fixed seed do not depend on timing
    win.controls.temperature.setValue(1.0)
    win.controls.seed_on.setChecked(True)
    win.controls.seed.setValue(3)
    return win
