"""The chat flow with its collaborators, without a window: what the chat shows is what the engine did."""

from __future__ import annotations

from gui_helpers import send, start_long_answer

from app.engine.stats import acceptance_histogram
from app.history import HistoryStore


def test_streamed_statuses_match_the_engine(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(60)
    send(qtbot, chat_rig, "hello there")
    rec = chat_rig.recorder
    emitted = [t for t in rec.tokens if t.emitted and t.text.strip("\n")]
    shown = chat_rig.chat.statuses_shown(1)
    assert [(t.text, t.status.value) for t in emitted] == shown
    assert {"accepted", "corrected"} <= {s for _, s in shown}
    # The rejected drafts appear struck through, in place, only when asked for.
    chat_rig.controls.show_rejected.setChecked(True)
    with_rejected = [(t.text, t.status.value) for t in rec.tokens if t.text.strip("\n")]
    assert chat_rig.chat.statuses_shown(1) == with_rejected
    assert any(s == "rejected" for _, s in with_rejected)


def test_token_details_show_p_q_and_top_entries(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(60)
    send(qtbot, chat_rig, "abc")
    tokens = chat_rig.conversation.messages[1].tokens
    corrected = next(i for i, t in enumerate(tokens) if t.status == "corrected")
    chat_rig.chat.token_clicked.emit(1, corrected)
    text = chat_rig.details.toPlainText()
    assert "corrected" in text and "p(x) =" in text and "top residual" in text


def test_histogram_counts_equal_the_rounds(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(80)
    send(qtbot, chat_rig, "count these rounds")
    rounds = chat_rig.recorder.rounds
    gamma = max(r.gamma for r in rounds)
    expected = acceptance_histogram(rounds, gamma)
    assert chat_rig.plots.histogram_counts() == expected
    chat_rig.plots.refresh()
    heights = list(chat_rig.plots.hist_message.opts["height"])
    assert [round(h * sum(expected)) for h in heights] == expected
    assert chat_rig.conversation.messages[1].stats["histogram"] == expected


def test_stop_ends_within_one_round_and_saves_a_partial_answer(qtbot, chat_rig, monkeypatch):
    rec = start_long_answer(chat_rig, monkeypatch, "go on and on", max_new=200)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 3, timeout=30_000)
    chat_rig.stop_button.click()
    done_at_stop = len(rec.rounds)
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=30_000)
    assert rec.finished[-1].reason == "cancelled"
    assert len(rec.rounds) <= done_at_stop + 1  # at most the round in flight
    stored = HistoryStore().messages(chat_rig.conversation.conv_id)
    assert stored[-1].role == "assistant" and stored[-1].partial
    assert stored[-1].content == chat_rig.conversation.messages[-1].text


def test_changing_gamma_changes_the_next_round(qtbot, chat_rig, monkeypatch):
    chat_rig.controls.gamma.setValue(2)
    rec = start_long_answer(chat_rig, monkeypatch, "gamma", max_new=80)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 2, timeout=30_000)
    chat_rig.controls.gamma.setValue(5)
    changed_after = len(rec.rounds)
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=60_000)
    assert rec.rounds[0].gamma == 2
    # The round in flight keeps its gamma; every later one asks for 5, cut only by the tokens left.
    remaining = [80 - sum(x.emitted for x in rec.rounds[: r.round]) for r in rec.rounds]
    later = range(changed_after + 1, len(rec.rounds))
    assert later and all(rec.rounds[i].gamma == min(5, remaining[i]) for i in later)
    assert all(r.gamma == 2 for r in rec.rounds[:changed_after])


def test_regenerate_and_edit_replace_later_messages(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(20)
    send(qtbot, chat_rig, "one")
    send(qtbot, chat_rig, "two")
    chat_rig.controls.seed_on.setChecked(False)
    chat_rig.chat_flow.regenerate()
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=30_000)
    assert [m.role for m in chat_rig.conversation.messages] == ["user", "assistant"] * 2
    chat_rig.chat.action.emit("edit", 0)
    assert chat_rig.input.toPlainText() == "one"
    chat_rig.input.setPlainText("uno")
    chat_rig.chat_flow.send()
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=30_000)
    assert [m.content for m in chat_rig.conversation.messages if m.role == "user"] == ["uno"]
    stored = HistoryStore().messages(chat_rig.conversation.conv_id)
    assert [m.role for m in stored] == ["user", "assistant"] and stored[0].content == "uno"


def test_plots_export_png_svg_csv(qtbot, chat_rig, tmp_path):
    chat_rig.controls.max_new.setValue(30)
    send(qtbot, chat_rig, "plots")
    written = chat_rig.plots.export(tmp_path / "plots")
    assert {p.suffix for p in written} == {".png", ".svg", ".csv"}
    assert all(p.stat().st_size > 0 for p in written)
    rows = (tmp_path / "plots" / "histogram.csv").read_text().splitlines()
    assert rows[0].startswith("accepted,message_rounds")


def test_finishing_an_answer_rewrites_only_the_tail(qtbot, chat_rig):
    """The footer is added where the answer ends (a full re-render stalled a long chat for 100 ms and more),
    and the previous answer loses its Regenerate link: the result equals a full render, anchor for anchor."""
    chat_rig.controls.max_new.setValue(12)
    for text in ("one", "two", "three"):
        send(qtbot, chat_rig, text)
    chat = chat_rig.chat
    incremental = chat.document().toHtml()
    assert incremental.count("act:regenerate:") == 1 and "act:regenerate:5" in incremental
    chat.render_all()
    assert chat.document().toHtml() == incremental


def test_export_html_contains_the_statuses(qtbot, chat_rig, tmp_path):
    chat_rig.add_history()
    chat_rig.controls.max_new.setValue(40)
    send(qtbot, chat_rig, "export me")
    path = tmp_path / "chat.html"
    chat_rig.history.export_conversation_to(path, "html")
    html = path.read_text(encoding="utf-8")
    emitted = [t for t in chat_rig.recorder.tokens if t.emitted]
    assert emitted, "the answer emitted no token, so the export shows nothing to check"
    for status in {t.status.value for t in emitted}:
        assert f'class="tok {status}"' in html
    assert html.count('class="tok ') >= len(emitted)  # every emitted token is in the export
