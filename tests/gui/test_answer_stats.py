"""A target-only answer (no round drafted) shows no measured speedup: its clock holds per-round overhead the
baseline's timed steps do not, so it read 0.84× against itself. A speculative answer still shows its own, in
the answer's footer, the presentation readout and the server's usage."""

from __future__ import annotations

from app.engine import DecodeParams, FinishedEvent, RoundEvent
from app.gui.chat_view import ChatView
from app.gui.live_stats import LiveStats
from app.gui.presentation import Readout
from app.gui.theme import LIGHT
from app.server.usage import speclens_usage
from app.session.conversation import Conversation, Message

BASELINE = 0.010  # seconds per target-only step


def _rounds(drafted: int) -> list[RoundEvent]:
    """The prefill round, then ten rounds of `drafted` drafts each, all accepted, 12 ms a round."""
    return [RoundEvent(round=i, gamma=drafted, drafted=drafted, accepted=drafted, emitted=drafted + 1,
                       bonus=drafted > 0, overlap=(0.9,) * drafted, draft_time=0.002 * drafted, verify_time=0.012)
            for i in range(11)]


def _answer(qtbot, drafted: int) -> tuple[str, str, dict]:
    """(the answer's footer, the readout's speedup, the server's usage) for an answer of _rounds(drafted)."""
    stats = LiveStats()
    stats.set_baseline(BASELINE)
    stats.add(_rounds(drafted))
    fin = FinishedEvent(reason="length", elapsed=0.2, prompt_tokens=3, new_tokens=40, rounds=11, token_ids=[])
    record = stats.message_record(fin, 40, DecodeParams(gamma=max(drafted, 1)))
    conversation = Conversation()
    conversation.add(Message("user", "hello"))
    conversation.add(Message("assistant", "x" * 40, stats=record))
    view = ChatView(LIGHT, conversation)
    qtbot.addWidget(view)
    view.render_all()
    readout = Readout(stats)
    qtbot.addWidget(readout)
    readout.refresh()
    usage = speclens_usage(_rounds(drafted), "draft" if drafted else "none", BASELINE)
    return view.toPlainText().splitlines()[-1], readout.values["speedup"].text(), usage


def test_a_target_only_answer_shows_no_measured_speedup(qtbot):
    footer, readout, usage = _answer(qtbot, 0)
    assert "tokens" in footer and "measured" not in footer and "×" not in footer
    assert readout == "–"
    assert usage["measured_speedup"] is None


def test_a_speculative_answer_still_shows_its_measured_speedup(qtbot):
    footer, readout, usage = _answer(qtbot, 3)
    assert "× measured" in footer
    assert readout.endswith("×") and usage["measured_speedup"] > 1
