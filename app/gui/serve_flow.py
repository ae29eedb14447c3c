"""Models ▸ Serve on localhost: the loaded pair behind the same OpenAI-compatible server as `speclens serve`
(app/server), with every answer requested through it streamed into the window: the request's turns and
the answer in the chat with their colours, the plots, the step-through, the history and a recording.

While serving, the server's engine host is the pair's only engine (one engine, batch size 1), so the
window counts as generating from start to stop: Send, regenerate, races, new chats and model changes
wait until serving stops (Stop ends a served answer). The host runs in its own thread; its items reach
the GUI thread through a queued signal and go through the answer flow (`begin`, `events`, `finished`,
`failed`), so a served answer is shown exactly as a typed one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Signal

from app.history import HistoryError
from app.session import State
from app.session.conversation import API, AnswerSource, Message

if TYPE_CHECKING:
    from app.server.host import EngineHost
    from app.server.server import LocalServer


class _Bridge(QObject):
    item = Signal(object, object)  # (Answer, Step | Done), emitted in the host's worker thread


class ServeFlow(QObject):
    """Handed the conversation each request is shown in, the chat model (its pair is served; SERVING while it
    runs), the history store, the status sink, the answer flow a served answer streams through, the decoding
    controls (the server's defaults) and the menu action it keeps checked while serving."""

    def __init__(self, conversation, model, store, status, answers, controls, action, parent=None) -> None:
        super().__init__(parent)
        self.conversation, self.model, self.store, self.status = conversation, model, store, status
        self.answers, self.controls, self.action = answers, controls, action
        self.host: EngineHost | None = None
        self.server: LocalServer | None = None
        self.current = None  # the server's answer the window is showing
        self.bridge = _Bridge()
        self.bridge.item.connect(self._on_item)  # queued: the bridge lives in the GUI thread
        action.triggered.connect(lambda _=False: self.toggle())

    @property
    def serving(self) -> bool:
        return self.server is not None

    def toggle(self) -> None:
        """Models ▸ Serve on localhost: start serving the loaded pair, or stop."""
        if self.serving:
            self.stop()
        elif not self.start():
            self.action.setChecked(False)

    def start(self) -> bool:
        model = self.model
        if model.target is None or not model.idle:
            self.status.flash(QCoreApplication.translate("ServeFlow", "Load a model pair and wait for the answer to end first"), 4000)
            return False
        from app.server import DEFAULT_HOST, DEFAULT_PORT
        from app.server.host import EngineHost, ServedPair
        from app.server.server import LocalServer

        self.host = EngineHost(ServedPair.of(model, self.controls.params(), self.controls.gamma_is_auto()))
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
            self.status.show_banner(QCoreApplication.translate("ServeFlow", "The local server could not start: no free port on 127.0.0.1"))
            return False
        model.begin(State.SERVING)  # the window's own decoding waits until serving stops
        self._waiting()
        self.status.show_banner(QCoreApplication.translate("ServeFlow", "Serving {0} at {1}/v1 (OpenAI-compatible): answers requested there appear here. "
                                    "Models ▸ Serve on localhost stops it.").format(self.host.pair.model_id, self.server.url),
                                info=True)
        self.action.setChecked(True)
        return True

    def stop(self) -> None:
        """Stop serving (the window also stops it before it closes its history)."""
        if self.server is not None:
            self.server.stop()
        if self.host is not None:
            self.host.close()  # the running answer ends at its next round
        # Its last items are queued for the GUI thread: show them now, while the history is open.
        QCoreApplication.sendPostedEvents(self.bridge, QEvent.Type.MetaCall)
        self.server = self.host = None
        self.action.setChecked(False)
        self.status.hide_banner()
        self.model.end(State.SERVING)
        self.status.say(QCoreApplication.translate("ServeFlow", "Serving stopped"))

    def _waiting(self) -> None:
        if self.server is not None:
            self.status.say(QCoreApplication.translate("ServeFlow", "Serving at {0}/v1 · waiting for requests").format(
                self.server.url))

    def _on_item(self, answer, item) -> None:
        from app.server.host import Step

        if isinstance(item, Step):
            if self.current is not answer:
                self._begin(answer)
            self.answers.events(list(item.events))
            return
        if self.current is not answer:
            if item.finished is None and item.error is None:  # cancelled while it waited: nothing to show
                return
            self._begin(answer)
        self.current = None
        if item.error is not None:
            self.answers.failed(item.error)
        else:
            self.answers.finished(item.finished)
        if self.host is not None:  # the answer ended; serving goes on
            self._waiting()

    def _begin(self, answer) -> None:
        """The request's turns as a new chat, and its answer streaming into it, as a typed one does."""
        job = answer.job
        system = "\n\n".join(m["content"] for m in job.messages if m["role"] == "system")
        turns = [m for m in job.messages if m["role"] != "system"]
        title = next((m["content"] for m in reversed(turns) if m["role"] == "user"), "")
        conv_id, ids = None, [None] * len(turns)
        try:
            conv_id = self.store.create_conversation(" ".join(title.split())[:60], system)
            ids = [self.store.add_message(conv_id, m["role"], m["content"]) for m in turns]
        except HistoryError as exc:
            self.status.show_banner(QCoreApplication.translate("ServeFlow", "Could not save the request: {0}").format(exc))
        self.conversation.open(conv_id, system, [Message(m["role"], m["content"], db_id=db_id)
                                                 for m, db_id in zip(turns, ids, strict=True)])
        host, target = self.host, self.model.target
        assert host is not None and target is not None  # its items come from the host serving the loaded pair
        draft = "none" if job.target_only else host.pair.draft_name
        params = job.params  # what the stored stats name, not the window's controls
        self.answers.begin(AnswerSource(API, target.name, draft, lambda: params, answer.cancel_event,
                                        turns=list(job.messages), baseline=host.baseline_step or None))
        self.status.say(QCoreApplication.translate("ServeFlow", "Answering a request from the local server …"))
        self.current = answer
