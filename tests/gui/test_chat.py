"""The chat window against the engine: what is shown is what the engine did."""

from __future__ import annotations

from gui_helpers import send, slow_params, start_long_answer

from app.engine import PromptLookupDrafter
from app.engine.stats import acceptance_histogram
from app.history import HistoryStore


def test_window_opens_with_the_pair_loaded(window):
    assert window.send_button.isEnabled()
    assert "CPU" in window.status_labels["device"].text()
    assert window.model.target.name in window.status_labels["models"].text()
    assert not window.banner.isVisible()


def test_streamed_statuses_match_the_engine(qtbot, window):
    window.controls.max_new.setValue(60)
    send(qtbot, window, "hello there")
    rec = window.recorder
    emitted = [t for t in rec.tokens if t.emitted and t.text.strip("\n")]
    shown = window.chat.statuses_shown(1)
    assert [(t.text, t.status.value) for t in emitted] == shown
    assert {"accepted", "corrected"} <= {s for _, s in shown}
    # The rejected drafts appear struck through, in place, only when asked for.
    window.controls.show_rejected.setChecked(True)
    with_rejected = [(t.text, t.status.value) for t in rec.tokens if t.text.strip("\n")]
    assert window.chat.statuses_shown(1) == with_rejected
    assert any(s == "rejected" for _, s in with_rejected)


def test_token_details_show_p_q_and_top_entries(qtbot, window):
    window.controls.max_new.setValue(60)
    send(qtbot, window, "abc")
    tokens = window.chat.messages[1].tokens
    corrected = next(i for i, t in enumerate(tokens) if t.status == "corrected")
    window.chat.token_clicked.emit(1, corrected)
    text = window.details.toPlainText()
    assert "corrected" in text and "p(x) =" in text and "top residual" in text


def test_histogram_counts_equal_the_rounds(qtbot, window):
    window.controls.max_new.setValue(80)
    send(qtbot, window, "count these rounds")
    rounds = window.recorder.rounds
    gamma = max(r.gamma for r in rounds)
    expected = acceptance_histogram(rounds, gamma)
    assert window.plots.histogram_counts() == expected
    window.plots.refresh()
    heights = list(window.plots.hist_message.opts["height"])
    assert [round(h * sum(expected)) for h in heights] == expected
    assert window.chat.messages[1].stats["histogram"] == expected


def test_stop_ends_within_one_round_and_saves_a_partial_answer(qtbot, window, monkeypatch):
    rec = start_long_answer(window, monkeypatch, "go on and on", max_new=200)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 3, timeout=30_000)
    window.stop_button.click()
    done_at_stop = len(rec.rounds)
    qtbot.waitUntil(lambda: not window.model.generating, timeout=30_000)
    assert rec.finished[-1].reason == "cancelled"
    assert len(rec.rounds) <= done_at_stop + 1  # at most the round in flight
    stored = HistoryStore().messages(window.chat_flow.conv_id)
    assert stored[-1].role == "assistant" and stored[-1].partial
    assert stored[-1].content == window.chat.messages[-1].text


def test_changing_gamma_changes_the_next_round(qtbot, window, monkeypatch):
    window.controls.gamma.setValue(2)
    rec = start_long_answer(window, monkeypatch, "gamma", max_new=80)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 2, timeout=30_000)
    window.controls.gamma.setValue(5)
    changed_after = len(rec.rounds)
    qtbot.waitUntil(lambda: not window.model.generating, timeout=60_000)
    assert rec.rounds[0].gamma == 2
    # The round in flight keeps its gamma; every later one asks for 5, cut only by the tokens left.
    remaining = [80 - sum(x.emitted for x in rec.rounds[: r.round]) for r in rec.rounds]
    later = range(changed_after + 1, len(rec.rounds))
    assert later and all(rec.rounds[i].gamma == min(5, remaining[i]) for i in later)
    assert all(r.gamma == 2 for r in rec.rounds[:changed_after])


def test_swapping_the_draft_applies_to_the_next_message(qtbot, window, monkeypatch):
    model_drafter = window.model.drafter
    monkeypatch.setattr(window.controls, "params", slow_params(window, 0.01))
    window.input.setPlainText("first")
    window.chat_flow.send()
    window.controls.draft_chosen.emit("prompt-lookup")  # chosen while answering
    qtbot.waitUntil(lambda: not window.model.generating, timeout=30_000)
    assert window.chat.messages[1].stats["draft"] == model_drafter.name
    qtbot.waitUntil(lambda: isinstance(window.model.drafter, PromptLookupDrafter), timeout=30_000)
    window.recorder.reset()
    send(qtbot, window, "second")
    assert window.chat.messages[3].stats["draft"] == window.model.drafter.name
    assert all(t.status.value != "rejected" or t.q is not None for t in window.recorder.tokens)


def test_regenerate_and_edit_replace_later_messages(qtbot, window):
    window.controls.max_new.setValue(20)
    send(qtbot, window, "one")
    send(qtbot, window, "two")
    window.controls.seed_on.setChecked(False)
    window.chat_flow.regenerate()
    qtbot.waitUntil(lambda: not window.model.generating, timeout=30_000)
    assert [m.role for m in window.chat.messages] == ["user", "assistant"] * 2
    window.chat.action.emit("edit", 0)
    assert window.input.toPlainText() == "one"
    window.input.setPlainText("uno")
    window.chat_flow.send()
    qtbot.waitUntil(lambda: not window.model.generating, timeout=30_000)
    assert [m.content for m in window.chat.messages if m.role == "user"] == ["uno"]
    stored = HistoryStore().messages(window.chat_flow.conv_id)
    assert [m.role for m in stored] == ["user", "assistant"] and stored[0].content == "uno"


def test_export_html_contains_the_statuses(qtbot, window, tmp_path):
    window.controls.max_new.setValue(40)
    send(qtbot, window, "export me")
    path = tmp_path / "chat.html"
    window.history.export_conversation_to(path, "html")
    html = path.read_text(encoding="utf-8")
    emitted = [t for t in window.recorder.tokens if t.emitted]
    assert emitted, "the answer emitted no token, so the export shows nothing to check"
    for status in {t.status.value for t in emitted}:
        assert f'class="tok {status}"' in html
    assert html.count('class="tok ') >= len(emitted)  # every emitted token is in the export


def test_plots_export_png_svg_csv(qtbot, window, tmp_path):
    window.controls.max_new.setValue(30)
    send(qtbot, window, "plots")
    written = window.plots.export(tmp_path / "plots")
    assert {p.suffix for p in written} == {".png", ".svg", ".csv"}
    assert all(p.stat().st_size > 0 for p in written)
    rows = (tmp_path / "plots" / "histogram.csv").read_text().splitlines()
    assert rows[0].startswith("accepted,message_rounds")


def test_a_bad_target_is_reported_in_the_window(qtbot, data_dir):
    from app.gui.main_window import MainWindow

    win = MainWindow(target_spec=str(data_dir / "missing-model"), draft_spec="self")
    qtbot.addWidget(win)
    qtbot.waitUntil(lambda: win.banner.isVisibleTo(win), timeout=30_000)
    assert "missing-model" in win.banner.text()
    assert not win.send_button.isEnabled()


def test_finishing_an_answer_rewrites_only_the_tail(qtbot, window):
    """The footer is added where the answer ends (a full re-render stalled a long chat for 100 ms and more),
    and the previous answer loses its Regenerate link: the result equals a full render, anchor for anchor."""
    window.controls.max_new.setValue(12)
    for text in ("one", "two", "three"):
        send(qtbot, window, text)
    chat = window.chat
    incremental = chat.document().toHtml()
    assert incremental.count("act:regenerate:") == 1 and "act:regenerate:5" in incremental
    chat.render_all()
    assert chat.document().toHtml() == incremental


def test_the_step_through_builds_its_panels_before_the_first_round(qtbot, window):
    """Loading a pair with a draft schedules the position panels; each is built in its own event-loop turn."""
    step = window.step
    assert window.model.drafter is not None
    wanted = window.model.auto.gamma_max if window.model.auto is not None else window.controls.params().gamma
    qtbot.waitUntil(lambda: len(step.positions) >= wanted, timeout=20_000)
    assert not any(p.isVisible() for p in step.positions)
    step.prepare(wanted + 2)
    assert len(step.positions) == wanted  # nothing is built synchronously
    qtbot.waitUntil(lambda: len(step.positions) == wanted + 2, timeout=20_000)
