"""GUI test fixtures: a MainWindow on the tiny model pair, with history and settings in tmp_path."""

from __future__ import annotations

import pytest
from gui_helpers import CPU, Recorder

from app.engine.policy import DrafterProfile
from app.models import calibration


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """History database and QSettings file live here (the app derives both from SPECLENS_DATA_DIR)."""
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def window(qtbot, data_dir, tiny_pair_dirs):
    from PySide6.QtCore import QSettings

    from app.gui.main_window import MainWindow, settings_file

    # chains: the tests of this window hand-set γ and fix the seed, and a tree's round kind would depend on timings
    QSettings(str(settings_file()), QSettings.Format.IniFormat).setValue("tree", "off")
    target, draft = tiny_pair_dirs
    win = MainWindow(target_spec=str(target), draft_spec=str(draft))
    qtbot.addWidget(win)  # closed at teardown: the engine thread is shut down through closeEvent
    win.show()
    qtbot.waitUntil(lambda: win.model.target is not None and win.model.drafter is not None, timeout=60_000)
    win.recorder = Recorder(win.worker)
    win.controls.gamma.setValue(4)  # hand-set: token statuses under a fixed seed do not depend on timing
    win.controls.temperature.setValue(1.0)
    win.controls.seed_on.setChecked(True)
    win.controls.seed.setValue(3)
    return win


@pytest.fixture
def auto_window(qtbot, data_dir, tiny_pair_dirs, monkeypatch, tmp_path):
    """A window asked for draft 'auto', with drafters of injected cost: (c, alpha) per spec."""
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))  # injected costs stay out of the real cache

    def make(costs: dict[str, tuple[float, float]]):
        from app.gui.main_window import MainWindow

        monkeypatch.setattr(calibration, "measure_verify", lambda *a, **k: CPU)
        monkeypatch.setattr(calibration, "with_tree", lambda target, drafter, ids, profile, verify: profile)
        monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: DrafterProfile(
            spec, spec, *costs[spec]))
        win = MainWindow(target_spec=str(tiny_pair_dirs[0]), draft_spec="auto")
        qtbot.addWidget(win)
        win.show()
        qtbot.waitUntil(lambda: win.model.target is not None, timeout=60_000)
        win.recorder = Recorder(win.worker)
        return win

    return make
