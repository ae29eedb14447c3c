"""The measured drafter choice in the window: target-only said plainly, auto γ fed live, hand-set γ wins."""

from __future__ import annotations

import pytest
from gui_helpers import Recorder, send

from app.engine.policy import DrafterProfile, VerifyCosts
from app.models import calibration

CPU = VerifyCosts((0.050, 0.055, 0.0585, 0.063, 0.0665, 0.072, 0.078, 0.083, 0.089))


@pytest.fixture
def auto_window(qtbot, data_dir, tiny_pair_dirs, monkeypatch, tmp_path):
    """A window asked for draft 'auto', with drafters of injected cost: (c, alpha) per spec."""
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))  # injected costs stay out of the real cache

    def make(costs: dict[str, tuple[float, float]]):
        from app.gui.main_window import MainWindow

        monkeypatch.setattr(calibration, "measure_verify", lambda *a, **k: CPU)
        monkeypatch.setattr(calibration, "probe", lambda target, drafter, spec, ids, verify, info=None: DrafterProfile(
            spec, spec, *costs[spec]))
        win = MainWindow(target_spec=str(tiny_pair_dirs[0]), draft_spec="auto")
        qtbot.addWidget(win)
        win.show()
        qtbot.waitUntil(lambda: win.target is not None, timeout=60_000)
        win.recorder = Recorder(win.worker)
        return win

    return make


def test_nothing_faster_runs_target_only_and_says_why(qtbot, auto_window):
    win = auto_window({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    assert win.drafter is None and win.selection.choice.target_only
    status = win.status_labels["choice"].text()
    assert status.startswith("Target-only") and "draft costs 1.05 target steps on this CPU" in status
    win.plots.refresh()
    notice = win.plots.speedup_notice.toPlainText()
    assert "Running target-only" in notice and "1.05 target steps on this CPU" in notice
    win.controls.max_new.setValue(12)
    send(qtbot, win, "hello")
    assert all(r.drafted == 0 for r in win.recorder.rounds)


def test_auto_gamma_is_fed_live_and_a_hand_set_gamma_wins(qtbot, auto_window, monkeypatch):
    from app.gui import model_flow

    monkeypatch.setattr(model_flow, "RECHECK_ROUNDS", 10**9)  # the live fallbacks are tested on their own below
    monkeypatch.setattr(model_flow, "MEASURED_FLOOR", 0.0)
    win = auto_window({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.7)})
    assert win.selection.spec == "prompt-lookup" and win.drafter is not None
    assert win.controls.gamma_is_auto() and win.auto is not None
    assert "γ auto" in win.status_labels["choice"].text()
    assert win.plots.speedup_notice.toPlainText() == ""
    win.controls.max_new.setValue(40)
    send(qtbot, win, "say it again. say it again. say it")
    assert win.auto.rounds == len(win.recorder.rounds) - 1  # every round but the prefill one
    assert all(1 <= r.gamma <= 8 for r in win.recorder.rounds)
    win.recorder.reset()
    win.controls.gamma.setValue(3)
    send(qtbot, win, "again")
    rounds = win.recorder.rounds
    assert rounds and all(r.gamma == min(3, r.gamma) for r in rounds) and rounds[0].gamma == 3


def test_a_hand_picked_slow_draft_is_called_slower(qtbot, auto_window, monkeypatch):
    win = auto_window({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    win.load_models(win.target_spec, "self")
    qtbot.waitUntil(lambda: not win.loading and win.drafter is not None, timeout=60_000)
    assert win.status_labels["choice"].text().startswith("Slower than target-only")
    win.plots.refresh()
    assert "Slower than target-only" in win.plots.speedup_notice.toPlainText()


def test_auto_falls_back_to_target_only_when_live_rounds_say_so(qtbot, auto_window):
    from app.engine import RoundEvent

    win = auto_window({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.7)})
    assert win.drafter is not None
    win.recheck_choice()
    assert win.drafter is not None  # no live evidence yet
    for i in range(1, 30):  # the draft is rejected every time in practice
        g = win.auto.gamma()
        win.auto.observe(RoundEvent(i, g, g, 0, 1, False, (0.0,) * g, 1e-5, CPU.seconds[g]))
    win.recheck_choice()
    assert win.drafter is None and win.auto is None
    assert win.status_labels["choice"].text() == "Target-only (switched live)"
    win.plots.refresh()
    assert "Switched to target-only: the live acceptance at draft position 1 (α₁ 0.0" in \
        win.plots.speedup_notice.toPlainText()


def test_auto_falls_back_when_an_answer_measures_slower(qtbot, auto_window):
    """The load-time probe can be optimistic for long chats (the bf16 self-draft slows with context faster than
    the target): an answer measured clearly slower than target-only steps timed in this chat ends the draft."""
    from app.gui.chat_view import ChatMessage

    win = auto_window({"self": (0.05, 0.98), "prompt-lookup": (0.001, 0.02)})
    assert win.drafter is not None
    win.chat.messages.append(ChatMessage("assistant", "x", stats={"speedup": 0.95, "new_tokens": 40}))
    win.recheck_choice()
    assert win.drafter is not None  # within the noise band
    win.chat.messages.append(ChatMessage("assistant", "x", stats={"speedup": 0.5, "new_tokens": 8}))
    win.recheck_choice()
    assert win.drafter is not None  # too short to judge: mostly prefill
    win.chat.messages.append(ChatMessage("assistant", "x", stats={"speedup": 0.5, "new_tokens": 40}))
    win.recheck_choice()
    assert win.drafter is None and win.auto is None
    win.plots.refresh()
    assert "the last answer ran at 0.50× target-only" in win.plots.speedup_notice.toPlainText()
