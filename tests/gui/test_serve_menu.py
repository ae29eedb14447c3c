"""Models ▸ Serve on localhost: the loaded pair behind the OpenAI-compatible server, and every answer asked
through it streamed into the window (chat tokens with their statuses, plots, history) while the window's
own decoding waits. The serve flow with its collaborators; closing a window stops its server."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtGui import QAction

pytestmark = pytest.mark.timeout(180)


def serve_action(win) -> QAction:
    return next(a for a in win.findChildren(QAction) if a.text() == "Serve on localhost")


def ask_in_thread(url: str, model: str, content: str, out: dict) -> threading.Thread:
    import openai

    def run():
        c = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)
        try:
            out["answer"] = c.chat.completions.create(
                model=model, messages=[{"role": "system", "content": "be kind"}, {"role": "user", "content": content}],
                max_tokens=20, seed=4, temperature=1.0)
        except Exception as exc:
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


@pytest.fixture
def served(qtbot, chat_rig):
    """The chat rig with a serve flow: Models ▸ Serve on localhost's action, not yet triggered."""
    from app.gui.serve_flow import ServeFlow

    rig = chat_rig
    action = QAction("Serve on localhost", checkable=True)
    rig.serve = ServeFlow(rig.conversation, rig.model, rig.store, rig.status, rig.answers, rig.controls, action)
    rig.own(action, rig.serve.bridge, rig.serve)
    yield rig, action
    if rig.serve.serving:
        rig.serve.stop()


def test_served_answers_stream_into_the_window(qtbot, served):
    win, action = served
    action.trigger()
    assert win.serve.serving and action.isChecked()
    url = win.serve.server.url
    assert url.startswith("http://127.0.0.1:") and url in win.status.banner.text()
    assert not win.send_button.isEnabled()  # the server holds the engine
    win.input.setPlainText("typed while serving")
    win.chat_flow.send()
    assert win.conversation.messages == []
    out: dict = {}
    thread = ask_in_thread(url, win.model.target.name, "hello window", out)
    qtbot.waitUntil(lambda: not thread.is_alive(), timeout=60_000)
    assert "error" not in out, out.get("error")
    answer = out["answer"]
    qtbot.waitUntil(lambda: len(win.conversation.messages) == 2 and not win.conversation.messages[1].streaming, timeout=30_000)
    user, shown = win.conversation.messages
    assert (user.role, user.text) == ("user", "hello window")
    assert win.conversation.system_prompt == "be kind"
    tokens = answer.choices[0].model_extra["speclens"]["tokens"]
    assert [(t.token_id, t.status) for t in shown.tokens] == [(t["id"], t["status"]) for t in tokens]
    assert shown.text == answer.choices[0].message.content
    assert len(win.stats.message.rounds) == answer.usage.model_extra["speclens"]["rounds"]  # the plots' data
    assert shown.stats["temperature"] == 1.0 and shown.stats["seed"] == 4  # the request's, not the controls'
    stored = win.store.messages(win.conversation.conv_id)
    assert [m.role for m in stored] == ["user", "assistant"] and stored[1].content == shown.text
    assert win.model.generating and not win.send_button.isEnabled()  # still serving
    action.trigger()
    assert not win.serve.serving and not action.isChecked()
    assert not win.model.generating and win.send_button.isEnabled()


def test_closing_the_window_stops_the_server(qtbot, window):
    import httpx

    win = window
    serve_action(win).trigger()
    server = win.serve.server
    assert httpx.get(f"{server.url}/health", timeout=10).json()["status"] == "ok"
    assert server.listening
    win.close()
    assert not win.serve.serving
    # Its own thread and sockets, not the port: the usual port, once free, may be another worker's server.
    assert not server.listening
