"""A question typed and sent while the models load: queued visibly, answered once ready, cancellable, and given
back when the load fails. The load is held at its first progress report (in the engine thread) until the test
has pressed Send, so the order does not depend on how fast the tiny models load. The chat flow and the model
flow with their collaborators."""

from __future__ import annotations

import threading

import pytest
from flow_rigs import ModelRig
from PySide6.QtCore import Qt


@pytest.fixture
def held_load(qtbot, data_dir, tiny_pair_dirs):
    """(make(target, draft) -> the model rig whose load waits at its first report, the gate that lets it on)."""
    from app.gui.settings import Settings

    gate = threading.Event()
    rigs = []

    def make(target: str, draft: str):
        rig = ModelRig(Settings(data_dir / "settings.ini"))
        rigs.append(rig)
        rig.loader.progress.connect(lambda *_: gate.wait(60), Qt.ConnectionType.DirectConnection)
        rig.model_flow.load_models(target, draft)
        qtbot.waitUntil(lambda: rig.model.loading, timeout=10_000)
        return rig

    yield make, gate
    gate.set()  # a failing test must not leave the engine thread waiting
    for rig in rigs:
        rig.close()


def queue(qtbot, win, text: str) -> None:
    win.input.setPlainText(text)
    assert win.send_button.isEnabled()  # during the load: Send queues
    qtbot.mouseClick(win.send_button, Qt.MouseButton.LeftButton)


def test_a_question_sent_while_loading_is_answered_once_ready(qtbot, held_load, tiny_pair_dirs):
    make, gate = held_load
    win = make(str(tiny_pair_dirs[0]), str(tiny_pair_dirs[1]))
    queue(qtbot, win, "abc")
    assert win.model.loading and win.model.target is None  # still loading: held, not sent
    assert win.queued.note.isVisible() and "will be sent when the model is ready" in win.queued.note.text()
    assert "abc" in win.queued.note.text() and win.input.toPlainText() == ""
    assert win.conversation.messages == []
    assert not win.send_button.isEnabled() and win.stop_button.isEnabled()  # one question at a time; Stop cancels
    gate.set()
    qtbot.waitUntil(lambda: len(win.conversation.messages) == 2 and not win.model.generating, timeout=60_000)
    user, answer = win.conversation.messages
    assert (user.role, user.text) == ("user", "abc")
    assert answer.role == "assistant" and answer.tokens and not answer.partial
    assert not win.queued.note.isVisible() and win.input.toPlainText() == ""


def test_stop_gives_the_queued_question_back(qtbot, held_load, tiny_pair_dirs):
    make, gate = held_load
    win = make(str(tiny_pair_dirs[0]), str(tiny_pair_dirs[1]))
    queue(qtbot, win, "abc")
    qtbot.mouseClick(win.stop_button, Qt.MouseButton.LeftButton)
    assert win.input.toPlainText() == "abc" and not win.queued.note.isVisible()
    assert win.send_button.isEnabled() and not win.stop_button.isEnabled()
    gate.set()
    qtbot.waitUntil(lambda: win.model.target is not None and not win.model.loading, timeout=60_000)
    assert win.conversation.messages == [] and win.input.toPlainText() == "abc"  # cancelled: nothing was sent


def test_a_failed_load_gives_the_question_back(qtbot, held_load, data_dir):
    make, gate = held_load
    win = make(str(data_dir / "missing-model"), "self")
    queue(qtbot, win, "abc")
    gate.set()
    qtbot.waitUntil(lambda: not win.model.loading, timeout=60_000)
    assert win.input.toPlainText() == "abc" and win.conversation.messages == []
    assert win.queued.note.isVisible() and "Not sent" in win.queued.note.text()
    assert not win.send_button.isEnabled()  # no target: nothing to send to
