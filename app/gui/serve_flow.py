"""Models ▸ Serve on localhost: the loaded pair behind the same OpenAI-compatible server as `speclens serve`
(app/server), with every answer requested through it streamed into the window: the request's turns and
the answer in the chat with their colours, the plots, the step-through, the history and a recording.

While serving, the server's engine host is the pair's only engine (one engine, batch size 1), so the
window counts as generating from start to stop: Send, regenerate, races, new chats and model changes
wait until serving stops (Stop ends a served answer). The host runs in its own thread; its items reach
the GUI thread through a queued signal and go through the chat flow's own slots (`_on_events`,
`_on_finished`, `_on_failed`), so a served answer is shown exactly as a typed one.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Signal
from PySide6.QtGui import QAction

from app.history import HistoryError
from app.session import State

from .chat_view import ChatMessage


class _Bridge(QObject):
    item = Signal(object, object)  # (Answer, Step | Done), emitted in the host's worker thread


class ServeFlow(QObject):
    def __init__(self, window, action: QAction) -> None:
        super().__init__(window)
        self.window, self.action = window, action
        self.host = self.server = None
        self.current = None  # the answer the window is showing
        self.bridge = _Bridge()
        self.bridge.item.connect(self._on_item)  # queued: the bridge lives in the GUI thread

    def start(self) -> bool:
        w = self.window
        if w.model.target is None or not w.model.idle:
            w.statusBar().showMessage(QCoreApplication.translate("ServeFlow", "Load a model pair and wait for the answer to end first"), 4000)
            return False
        from app.server import DEFAULT_HOST, DEFAULT_PORT
        from app.server.host import EngineHost, ServedPair
        from app.server.server import LocalServer

        self.host = EngineHost(ServedPair.of(w.model, w.controls.params(), w.controls.gamma_is_auto()))
        self.host.subscribe(lambda answer, item: self.bridge.item.emit(answer, item))
        self.host.start(wait=False)
        for port in (DEFAULT_PORT, 0):  # the usual port, else any free one
            try:
                self.server = LocalServer(self.host, address=DEFAULT_HOST, port=port).start()
                break
            except RuntimeError:
                self.server = None
        if self.server is None:
            self.host.close()
            self.host = None
            w.show_banner(QCoreApplication.translate("ServeFlow", "The local server could not start: no free port on 127.0.0.1"))
            return False
        w.serving = self
        w.installEventFilter(self)
        w.model.begin(State.SERVING)  # the window's own decoding waits until serving stops
        self._waiting()
        w.show_banner(QCoreApplication.translate("ServeFlow", "Serving {0} at {1}/v1 (OpenAI-compatible): answers requested there appear here. "
                          "Models ▸ Serve on localhost stops it.").format(self.host.pair.model_id, self.server.url),
                      info=True)
        self.action.setChecked(True)
        return True

    def stop(self) -> None:
        w = self.window
        if self.server is not None:
            self.server.stop()
        if self.host is not None:
            self.host.close()  # the running answer ends at its next round
        # Its last items are queued for the GUI thread: show them now, while the history is open.
        QCoreApplication.sendPostedEvents(self.bridge, QEvent.Type.MetaCall)
        self.server = self.host = None
        w.serving = None
        w.removeEventFilter(self)
        self.action.setChecked(False)
        w.hide_banner()
        w.model.end(State.SERVING)
        w.progress_label.setText(QCoreApplication.translate("ServeFlow", "Serving stopped"))

    def _waiting(self) -> None:
        self.window.progress_label.setText(
            QCoreApplication.translate("ServeFlow", "Serving at {0}/v1 · waiting for requests").format(self.server.url))

    def eventFilter(self, obj, event) -> bool:
        if obj is self.window and event.type() == QEvent.Type.Close:
            self.stop()  # before the window closes its history
        return False

    def _on_item(self, answer, item) -> None:
        from app.server.host import Step

        w = self.window
        if isinstance(item, Step):
            if self.current is not answer:
                self._begin(answer)
            w.chat_flow._on_events(list(item.events))
            return
        if self.current is not answer:
            if item.finished is None and item.error is None:  # cancelled while it waited: nothing to show
                return
            self._begin(answer)
        self.current = None
        params = answer.job.params  # what the stored stats name, not the window's controls
        if item.error is not None:
            w.chat_flow.fail_answer(item.error, params)
        else:
            w.chat_flow.finish_answer(item.finished, params)
        if self.host is not None:  # the chat flow ended its answer; serving goes on
            self._waiting()

    def _begin(self, answer) -> None:
        """The request's turns as a new chat, and an empty answer streaming, as the chat flow starts one."""
        w, job = self.window, answer.job
        w.history.clear_chat()
        system = "\n\n".join(m["content"] for m in job.messages if m["role"] == "system")
        turns = [m for m in job.messages if m["role"] != "system"]
        w.system_prompt.setText(system)
        title = next((m["content"] for m in reversed(turns) if m["role"] == "user"), "")
        ids = [None] * len(turns)
        try:
            w.chat_flow.conv_id = w.store.create_conversation(" ".join(title.split())[:60], system)
            ids = [w.store.add_message(w.chat_flow.conv_id, m["role"], m["content"]) for m in turns]
        except HistoryError as exc:
            w.show_banner(QCoreApplication.translate("ServeFlow", "Could not save the request: {0}").format(exc))
        for m, db_id in zip(turns, ids, strict=True):
            w.chat.add_message(ChatMessage(m["role"], m["content"], db_id=db_id))
        w.conversations.refresh(w.chat_flow.conv_id)
        draft = "none" if job.target_only else self.host.pair.draft_name
        stats = {"target": w.model.target.name, "draft": draft, "source": "api"}
        w.chat_flow.answer_index = w.chat.add_message(ChatMessage("assistant", stats=stats, streaming=True))
        w.stats.new_message()
        if self.host.baseline_step:
            w.stats.set_baseline(self.host.baseline_step)
        w.chat_flow.cancel = answer.cancel_event  # Stop ends the served answer too
        w.step.clear()
        w.step.set_live(True)
        w._sync_buttons()
        w.progress_label.setText(QCoreApplication.translate("ServeFlow", "Answering a request from the local server …"))
        w.recordings.begin(list(job.messages), job.params)
        w.chat_flow.flush_timer.start()
        self.current = answer


def toggle_serving(window, action: QAction) -> ServeFlow | None:
    """Models ▸ Serve on localhost: start serving the loaded pair, or stop; the flow while it serves."""
    if window.serving is not None:
        window.serving.stop()
        return None
    flow = ServeFlow(window, action)
    if not flow.start():
        action.setChecked(False)
        return None
    return flow
