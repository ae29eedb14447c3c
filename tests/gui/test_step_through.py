"""The round step-through: pausing holds the engine between rounds, stepping shows each round as the
engine decided it (drafts, p and q bars, the coin u, the residual or the bonus), from events only; the
chat flow with its collaborators, and the step-through in its dock of the window."""

from __future__ import annotations

import pytest
from gui_helpers import send
from PySide6.QtCore import Qt


def shown_bars(item) -> list[float]:
    return [float(h) for h in item.opts["height"]]


def show_step_through(step) -> None:
    """As View ▸ Step through rounds does: shown, with the keyboard."""
    step.show()
    step.setFocus()


def check_round_shown(step, r) -> None:
    """Every panel of the step-through against the RoundEvent the engine emitted."""
    for i in range(r.drafted):
        panel = step.positions[i]
        assert panel.isVisible()
        assert "x = <code>" in panel.title.text()
        # the drafted token is the first bar; p and q bars carry its exact p(x) and q(x)
        assert shown_bars(panel.p_bars)[0] == pytest.approx(r.p_x[i])
        assert shown_bars(panel.q_bars)[0] == pytest.approx(r.q_x[i])
        assert float(panel.accept_zone.opts["width"][0]) == pytest.approx(r.accept_prob[i])
        if i < len(r.u):
            assert panel.u_line.isVisible() and panel.u_line.value() == pytest.approx(r.u[i])
            verdict = "accepted" if i < r.accepted else "rejected"
            assert verdict in panel.title.text()
            assert (r.u[i] < r.accept_prob[i]) == (i < r.accepted)
        else:
            assert not panel.u_line.isVisible() and "not tested" in panel.title.text()
    assert all(not p.isVisible() for p in step.positions[r.drafted:])
    title = step.outcome.title.text()
    heights = shown_bars(step.outcome.dist)
    if r.accepted < r.drafted:
        assert f"Rejected at position {r.accepted + 1}" in title and "residual" in title
        assert heights[: len(r.next_top)] == pytest.approx([v for _, v in r.next_top])
    else:
        assert "bonus" in title
        assert heights[: len(r.top_p[r.drafted])] == pytest.approx([v for _, v in r.top_p[r.drafted]])


def test_stepping_shows_each_round_as_decided(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(60)
    send(qtbot, chat_rig, "hello there")
    rounds = chat_rig.recorder.rounds
    step = chat_rig.step
    assert step.rounds == rounds  # the view holds exactly the engine's events
    kinds = {("rejection" if r.accepted < r.drafted else "bonus") for r in rounds}
    assert kinds == {"rejection", "bonus"}
    show_step_through(chat_rig.step)
    assert step.index == len(rounds) - 1
    qtbot.keyClick(step, Qt.Key.Key_Home)
    for k, r in enumerate(rounds):
        assert step.index == k
        assert f"Round {k + 1} of {len(rounds)}" in step.header.text()
        check_round_shown(step, r)
        qtbot.keyClick(step, Qt.Key.Key_Right)
    assert step.index == len(rounds) - 1  # → at the last round of a finished answer stays there
    qtbot.keyClick(step, Qt.Key.Key_Left)
    assert step.index == len(rounds) - 2
    check_round_shown(step, rounds[-2])


def test_pause_holds_the_engine_and_a_step_runs_one_round(qtbot, chat_rig):
    """Paused before sending: the answer starts held before its first round; each → runs one round."""
    chat_rig.controls.max_new.setValue(200)
    show_step_through(chat_rig.step)
    qtbot.keyClick(chat_rig.step, Qt.Key.Key_Space)  # pause
    assert chat_rig.step.pause_button.isChecked()
    chat_rig.input.setPlainText("tell me more")
    chat_rig.chat_flow.send()
    gate, rec = chat_rig.round_gate, chat_rig.recorder
    qtbot.waitUntil(lambda: gate.waiting, timeout=30_000)
    assert rec.rounds == [] and chat_rig.model.generating
    for held in (1, 2, 3):
        qtbot.keyClick(chat_rig.step, Qt.Key.Key_Right)  # at the newest round while paused: one more round
        qtbot.waitUntil(lambda n=held: gate.waiting and len(chat_rig.step.rounds) == n, timeout=30_000)
        assert len(rec.rounds) == held and chat_rig.step.index == held - 1
        check_round_shown(chat_rig.step, rec.rounds[-1])
    qtbot.keyClick(chat_rig.step, Qt.Key.Key_Left)
    assert chat_rig.step.index == 1
    qtbot.keyClick(chat_rig.step, Qt.Key.Key_Space)  # resume: the answer runs to its end
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=120_000)
    assert not chat_rig.step.pause_button.isChecked() and not gate.paused
    assert rec.finished[-1].reason in ("eos", "length") and len(rec.rounds) > 3


def test_stop_while_paused_ends_the_answer(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(200)
    chat_rig.step.set_paused(True)
    chat_rig.input.setPlainText("abc")
    chat_rig.chat_flow.send()
    qtbot.waitUntil(lambda: chat_rig.round_gate.waiting, timeout=30_000)
    chat_rig.chat_flow.stop()
    # the engine's own end (recorded in its thread) and the window's, whichever comes first
    qtbot.waitUntil(lambda: bool(chat_rig.recorder.finished) and not chat_rig.model.generating, timeout=30_000)
    assert chat_rig.recorder.finished[-1].reason == "cancelled"


def test_a_hidden_step_through_draws_only_when_shown(qtbot, window):
    """Hidden (as it starts) the panels are not redrawn every round (eight cost ~120 ms of GUI thread);
    showing it (View ▸ Step through rounds, or its tab raised) draws the latest round at once."""
    window.docks["plots"].raise_()
    qtbot.waitUntil(lambda: window.step.visibleRegion().isEmpty())
    send(qtbot, window, "hidden rounds")
    step = window.step
    assert step.rounds and "Round" not in step.header.text()
    window.docks["step"].show()  # drawn on the next turn of the event loop
    qtbot.waitUntil(lambda: f"Round {len(step.rounds)} of {len(step.rounds)}" in step.header.text())
    check_round_shown(step, step.rounds[-1])
