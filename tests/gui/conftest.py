"""GUI test fixtures: a MainWindow on the tiny model pair, with history and settings in tmp_path, and a flow's
collaborators without a window (tests/gui/flow_rigs.py)."""

from __future__ import annotations

import pytest
from flow_rigs import ChatRig, ModelRig, Parts
from gui_helpers import CPU, Recorder

from app.drafting import auto as calibration
from app.engine.policy import DrafterProfile


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """History database and QSettings file live here (the app derives both from SPECLENS_DATA_DIR)."""
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def window(qtbot, data_dir, tiny_pair_dirs):
    from app.gui.main_window import MainWindow
    from app.gui.settings import Settings

    # chains: the tests of this window hand-set γ and fix the seed, and a tree's round kind would depend on timings
    Settings().tree = "off"
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


def inject_costs(monkeypatch, tmp_path, costs: dict[str, tuple[float, float]]) -> None:
    """Drafters of injected cost, (c, alpha) per spec, for draft 'auto' to choose among."""
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))  # injected costs stay out of the real cache
    monkeypatch.setattr(calibration, "measure_verify", lambda *a, **k: CPU)
    monkeypatch.setattr(calibration, "with_tree", lambda target, drafter, ids, profile, verify: profile)
    monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: DrafterProfile(
        spec, spec, *costs[spec]))


@pytest.fixture
def auto_rig(qtbot, data_dir, tiny_pair_dirs, monkeypatch, tmp_path):
    """make(costs) -> the model flow with its collaborators, the tiny target loaded with draft 'auto' among
    drafters of injected cost: (c, alpha) per spec."""
    from app.gui.settings import Settings

    rigs = []

    def make(costs: dict[str, tuple[float, float]]):
        inject_costs(monkeypatch, tmp_path, costs)
        rig = ModelRig(Settings(data_dir / "settings.ini"))
        rigs.append(rig)
        rig.model_flow.load_models(str(tiny_pair_dirs[0]), "auto")
        qtbot.waitUntil(lambda: rig.model.target is not None and rig.model.idle, timeout=60_000)
        rig.recorder = Recorder(rig.worker)
        return rig

    yield make
    for rig in rigs:
        rig.close()


@pytest.fixture
def auto_window(qtbot, data_dir, tiny_pair_dirs, monkeypatch, tmp_path):
    """A window asked for draft 'auto', with drafters of injected cost: (c, alpha) per spec."""

    def make(costs: dict[str, tuple[float, float]]):
        from app.gui.main_window import MainWindow

        inject_costs(monkeypatch, tmp_path, costs)
        win = MainWindow(target_spec=str(tiny_pair_dirs[0]), draft_spec="auto")
        qtbot.addWidget(win)
        win.show()
        qtbot.waitUntil(lambda: win.model.target is not None, timeout=60_000)
        win.recorder = Recorder(win.worker)
        return win

    return make


@pytest.fixture
def parts(qtbot, data_dir):
    """A flow's collaborators with no pair loaded and no engine: what a replay needs."""
    made = Parts()
    yield made
    made.close()


@pytest.fixture
def chat_rig(qtbot, data_dir, tiny_pair_dirs):
    """The chat flow with its collaborators on the tiny pair, chains, γ 4 and seed 3 (as the window fixture)."""
    rig = ChatRig()
    rig.install(*tiny_pair_dirs)
    rig.recorder = Recorder(rig.worker)
    yield rig
    rig.close()


@pytest.fixture
def model_rig(qtbot, data_dir, tiny_pair_dirs):
    """The model flow with its collaborators, the tiny pair loaded through it as chains."""
    from app.gui.settings import Settings

    settings = Settings(data_dir / "settings.ini")
    settings.tree = "off"
    rig = ModelRig(settings)
    rig.model.set_tree_mode("off")
    rig.model_flow.load_models(*map(str, tiny_pair_dirs))
    qtbot.waitUntil(lambda: rig.model.target is not None and rig.model.drafter is not None and rig.model.idle,
                    timeout=60_000)
    rig.recorder = Recorder(rig.worker)
    for spin, value in ((rig.controls.gamma, 4), (rig.controls.temperature, 1.0), (rig.controls.seed, 3)):
        spin.setValue(value)  # as the window fixture: a hand-set γ and a fixed seed
    rig.controls.seed_on.setChecked(True)
    yield rig
    rig.close()
