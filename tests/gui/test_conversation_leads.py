"""The conversation leads (issue #28): at 1366×768 and 1920×1080 the chat has the window's height and shows at
least MIN_LINES lines of an answer, the figures stand beside it in a side column with the step-through hidden;
the input has the keyboard at launch, after an answer and after New chat; an answer's header is one short line
with the full pair in its tooltip; a race hides the chat's (empty) statistics and gives them back; the two
speedups say which is which; the loading status names drafters, not their paths."""

from __future__ import annotations

import pytest
from gui_helpers import send
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontMetrics, QHelpEvent, QTextCursor
from PySide6.QtWidgets import QApplication, QToolTip

from app.gui import window_settings
from app.history.records import StoredToken
from app.session.conversation import Message

SIZES = [(1366, 768), (1920, 1080)]
MIN_SHARE, MIN_LINES = 0.6, 12
LONG_TARGET = "SmolLM2-135M-Instruct (embedded) (bf16 · oneDNN packed)"
LONG_DRAFT = "prompt lookup, else SmolLM2-135M-Instruct (embedded) feature draft (trained feature draft)"


def _long_answer(lines: int = 40) -> list[Message]:
    tokens = []
    for i in range(lines):
        text = f"line {i + 1} of a long answer, long enough to read" + ("\n" if i < lines - 1 else "")
        tokens.append(StoredToken(token_id=i, text=text, status="accepted", round=i, p=0.9, q=0.9, accept_prob=1.0))
    answer = Message("assistant", "".join(t.text for t in tokens), tokens=tokens,
                     stats={"target": LONG_TARGET, "draft": LONG_DRAFT, "new_tokens": lines})
    return [Message("user", "Tell me something long."), answer]


def visible_answer_lines(chat) -> int:
    """Laid-out lines of the answer's text wholly inside the chat's viewport, as scrolled."""
    doc, top = chat.document(), chat.verticalScrollBar().value()
    bottom = top + chat.viewport().height()
    shown, block = 0, doc.begin()
    while block.isValid():
        if block.text().startswith("line "):
            rect = doc.documentLayout().blockBoundingRect(block)
            layout = block.layout()
            for i in range(layout.lineCount()):
                line = layout.lineAt(i)
                y = rect.top() + line.y()
                shown += y >= top and y + line.height() <= bottom
        block = block.next()
    return shown


@pytest.fixture(params=SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def first_run(request, qtbot, data_dir):
    """A first-run window (no saved layout) at the size, without models: the layout alone."""
    from app.gui.main_window import MainWindow

    width, height = request.param
    win = MainWindow(target_spec="none-such", draft_spec="none", autoload=False)
    qtbot.addWidget(win)
    win.resize(width, height)
    window_settings.default_docks(win)
    win.show()
    qtbot.waitExposed(win)
    win.conversation.open(messages=_long_answer())
    QApplication.processEvents()
    win.chat.verticalScrollBar().setValue(0)
    return win, request.param


def test_the_chat_has_the_height_and_the_figures_stand_beside_it(first_run):
    win, (width, height) = first_run
    share = win.chat.height() / win.height()
    assert share >= MIN_SHARE, (win.chat.height(), share)
    assert visible_answer_lines(win.chat) >= MIN_LINES
    plots, chat = win.docks["plots"], win.chat
    assert plots.isVisible() and win.dockWidgetArea(plots) == Qt.DockWidgetArea.RightDockWidgetArea
    assert plots.mapTo(win, plots.rect().topLeft()).x() >= chat.mapTo(win, chat.rect().topRight()).x()
    assert not win.docks["step"].isVisible()  # View ▸ Step through rounds shows it
    win.show_step_through()
    assert win.docks["step"].isVisible()


def test_a_layout_saved_by_an_older_version_is_not_restored(qtbot, data_dir):
    """A layout saved before LAYOUT_VERSION (saveState's version 0: the statistics below the chat) gives way to
    the new default."""
    from PySide6.QtWidgets import QMainWindow

    from app.gui.main_window import MainWindow
    from app.gui.settings import Settings

    win = MainWindow(target_spec="none-such", draft_spec="none", autoload=False)
    qtbot.addWidget(win)
    win.removeDockWidget(win.docks["plots"])
    win.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, win.docks["plots"])
    win.docks["plots"].show()
    settings = Settings()
    settings.window_state = QMainWindow.saveState(win)  # as SpecLens saved it before
    settings.sync()
    again = MainWindow(target_spec="none-such", draft_spec="none", autoload=False)
    qtbot.addWidget(again)
    assert again.dockWidgetArea(again.docks["plots"]) == Qt.DockWidgetArea.RightDockWidgetArea


def test_the_input_has_the_keyboard_at_launch_after_an_answer_and_after_new_chat(qtbot, window):
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.input, timeout=5_000)  # at launch
    window.send_button.setFocus()  # as clicking Send leaves it
    send(qtbot, window, "hello")
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.input, timeout=5_000)
    window.conversations.setFocus()  # the list, whose New chat button was clicked
    window.history.new_chat()
    assert QApplication.focusWidget() is window.input


def test_the_answers_header_is_one_short_line_with_the_full_pair_in_its_tooltip(first_run):
    win, _ = first_run
    line, tip = win.chat.header_text(1)
    assert line.startswith("SpecLens") and "SmolLM2-135M ← lookup, else feature draft" in line
    assert "\u2029" not in line and "\n" not in line
    assert QFontMetrics(win.chat.font()).horizontalAdvance(line) < win.chat.viewport().width()
    assert LONG_TARGET in tip and LONG_DRAFT in tip  # the kernels and the whole draft
    cursor = QTextCursor(win.chat.document().findBlockByNumber(win.chat._header_block[1]))
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    cursor.movePosition(QTextCursor.MoveOperation.Left, n=4)  # on the pair's text
    at = win.chat.cursorRect(cursor).center()
    QApplication.sendEvent(win.chat.viewport(), QHelpEvent(QEvent.Type.ToolTip, at, win.chat.viewport().mapToGlobal(at)))
    assert QToolTip.isVisible() and QToolTip.text() == tip  # hovering the header shows it


def test_a_race_hides_the_chats_statistics_and_gives_them_back(qtbot, window):
    plots, controls = window.docks["plots"], window.docks["controls"]
    assert plots.isVisible() and not plots.visibleRegion().isEmpty()
    window.controls.max_new.setValue(12)
    assert window.race.start("race me", "lookup")
    qtbot.waitUntil(lambda: window.race_view.isVisible(), timeout=60_000)
    assert not plots.isVisible() and not controls.isVisible()  # the race has the width
    window.race.close()
    assert plots.isVisible() and controls.isVisible()
    QApplication.processEvents()
    assert not plots.visibleRegion().isEmpty()  # the statistics in front again, the controls behind their tab


def test_the_two_speedups_say_which_is_which(qtbot, window):
    send(qtbot, window, "hello there")
    window.status.refresh()
    window.plots.refresh()
    key = window.plots.plots["speedup"].plotItem.titleLabel.text
    assert "this answer so far" in key and "predicted" not in key
    models = " ".join(label.text() for label in window.status.labels.values())
    assert "predicted" not in models
    # the dashed line is the one formula (the policy's) on this answer's rounds, not the session's
    from app.engine.stats import answer_speedup

    send(qtbot, window, "and a second, different answer")
    st = window.stats
    assert st.message.alpha != st.session.alpha
    assert st.predicted() == pytest.approx(answer_speedup(st.message.rounds, st.message.alpha, st.baseline_step))


def test_the_status_bar_names_autos_plan(auto_rig):
    rig = auto_rig({"self": (1.05, 0.98), "prompt-lookup": (0.001, 0.7)})
    text = rig.status.labels["choice"].text()
    assert f"auto's plan {rig.model.auto.predicted:.2f}×" in text and "predicted" not in text


def test_the_loading_status_names_a_trained_draft_not_its_path(tmp_path, monkeypatch, tiny_pair_dirs):
    from gui_helpers import CPU

    from app.drafting import auto as calibration
    from app.drafting.registry import spec_title
    from app.gui.load_phases import phase_progress
    from app.models import load_model

    folder = tmp_path / "drafts" / "smollm2-135m"
    folder.mkdir(parents=True)
    (folder / "feature_draft.json").write_text("{}")  # damaged: left out once named
    assert spec_title(str(folder)) == "feature draft (smollm2-135m)"
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(calibration, "measure_verify", lambda *a, **k: CPU)
    reports = []
    calibration.calibrate(load_model(str(tiny_pair_dirs[0]), device="cpu"), [str(folder)], use_cache=False,
                          skip_failures=True, progress=reports.append)
    shown = [phase_progress("Draft", p)[0] for p in reports if p.stage == "measure" and "timing drafter" in (p.message or "")]
    assert shown and all("feature draft (smollm2-135m)" in t and str(folder) not in t for t in shown), shown
    assert spec_title(str(tmp_path / "model.gguf")) == "model.gguf"
    assert spec_title("self") == "self"
