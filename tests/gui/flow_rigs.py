"""A flow's collaborators, built without a MainWindow: the session's models (ChatModel, Conversation, live
statistics, a history store), the widgets a flow drives, the status sink, and the answer flow every answer
streams through. A flow's test builds these and then the flow under test, as MainWindow._compose does.

The Qt objects made here are deleted at close, in the GUI thread. Left to the garbage collector (they sit
in reference cycles through their observers), they were once collected by the next test's engine thread,
inside the gc.collect() of a drafter choice (app/drafting/auto.py), and both threads deadlocked."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QThread
from PySide6.QtWidgets import QPlainTextEdit, QPushButton

from app.gui.answer_flow import AnswerFlow
from app.gui.answer_recorder import AnswerRecorder
from app.gui.chat_flow import ChatFlow
from app.gui.chat_view import ChatView
from app.gui.compile_flow import CompileFlow
from app.gui.controls import ControlsPanel
from app.gui.conversations import ConversationsPanel
from app.gui.distill_dialog import DistillWorker
from app.gui.history_flow import HistoryFlow
from app.gui.live_stats import LiveStats
from app.gui.model_flow import ModelFlow
from app.gui.model_loader import ModelLoader
from app.gui.playback_bar import PlaybackBar
from app.gui.plots import PlotsPanel
from app.gui.queued_question import QueuedQuestion
from app.gui.recording_flow import RecordingFlow
from app.gui.round_gate import RoundGate
from app.gui.send_buttons import SendButtons
from app.gui.status import WindowStatus
from app.gui.step_view import StepThrough
from app.gui.theme import LIGHT
from app.gui.token_details import TokenDetails
from app.gui.worker import GenerationWorker
from app.history import HistoryStore
from app.session import ChatModel, Conversation


class Parts:
    """What the answer flow and the flows around it are handed. own() keeps a Qt object for close to delete."""

    def __init__(self) -> None:
        self._owned: list = []
        self.model = ChatModel()
        self.conversation = Conversation()
        self.stats = LiveStats()
        self.store = HistoryStore()  # in SPECLENS_DATA_DIR (the data_dir fixture)
        self.controls = ControlsPanel()
        self.status = WindowStatus(self.model, self.stats, self.controls.gamma_is_auto)
        self.chat = ChatView(LIGHT, self.conversation)
        self.controls.show_rejected_changed.connect(self.chat.set_show_rejected)
        self.step = StepThrough(LIGHT)
        self.round_gate = RoundGate()
        self.step.pause_changed.connect(self.round_gate.set_paused)
        self.step.step_requested.connect(self.round_gate.step)
        self.details = TokenDetails()
        self.plots = PlotsPanel(self.stats, LIGHT)
        self.input = QPlainTextEdit()
        self.playback = PlaybackBar()
        self.answer_recorder = AnswerRecorder(self.model, self.status)
        self.answers = AnswerFlow(self.conversation, self.model, self.store, self.status, self.stats, self.step,
                                  self.answer_recorder)
        self.conversation.opened.connect(self.stats.reset)
        self.conversation.opened.connect(self.step.clear)
        self.conversation.answer_ended.connect(lambda _index: self.status.refresh())
        self.recordings = RecordingFlow(self.conversation, self.model, self.answers, self.answer_recorder, self.status,
                                        self.playback, self.details, race=None, parent=self.chat)
        self.own(self.controls, self.status, self.status.bar, self.status.banner, self.chat, self.step, self.details,
                 self.plots, self.input, self.playback, self.answers)

    def own(self, *objects) -> None:
        self._owned += objects

    def install(self, target_dir, draft_dir) -> None:
        """The tiny pair as chains (a tree's round kind would depend on timings), decoded by the inspector
        and the step-through, with the hand-set γ and seed the window tests use."""
        from app.session.loading import LoadRequest, load_pair

        result = load_pair(LoadRequest(str(target_dir), str(draft_dir), tree=False), lambda _f: None,
                           lambda _what, _p: None)
        self.model.install(result.target, result.drafter, result.draft_spec, result.selection)
        tokenizer = result.target.tokenizer
        self.details.decode = lambda token_id: tokenizer.decode([token_id])
        self.step.set_decoder(self.details.decode)
        self.controls.gamma.setValue(4)  # hand-set: token statuses under a fixed seed do not depend on timing
        self.controls.temperature.setValue(1.0)
        self.controls.seed_on.setChecked(True)
        self.controls.seed.setValue(3)

    def add_history(self) -> None:
        """The history flow and the conversation list it drives, linked as the window links them."""
        self.conversations = ConversationsPanel(self.store, self.conversation)
        self.history = HistoryFlow(self.conversation, self.model, self.store, self.status, self.stats,
                                   self.conversations, self.input, self.plots)
        self.conversations.opened.connect(self.history.open_conversation)
        self.conversations.deleted.connect(self.history.conversation_deleted)
        self.conversations.new_requested.connect(self.history.new_chat)
        self.own(self.conversations, self.history)

    def close(self) -> None:
        self.store.close()
        for obj in reversed(self._owned):
            if shiboken6.isValid(obj):
                shiboken6.delete(obj)
        self._owned.clear()


class Engine:
    """The engine thread with its generation worker, whose signals reach the answer flow (as the window's
    table of engine links connects them)."""

    def __init__(self, parts: Parts) -> None:
        self.thread = QThread()
        self.worker = GenerationWorker()
        self.worker.moveToThread(self.thread)
        answers = parts.answers
        self.links = [(self.worker.baseline, answers.baseline), (self.worker.events, answers.events),
                      (self.worker.finished, answers.finished), (self.worker.failed, answers.failed)]
        for signal, slot in self.links:
            signal.connect(slot)
        self.thread.start()

    def stop(self) -> None:
        self.thread.quit()
        self.thread.wait()


class ChatRig(Parts):
    """The chat flow with its collaborators: the parts, the queued question, Send and Stop, and an engine."""

    def __init__(self) -> None:
        super().__init__()
        self.engine = Engine(self)
        self.worker = self.engine.worker
        self.queued = QueuedQuestion(self.input)
        self.chat_flow = ChatFlow(conversation=self.conversation, model=self.model, store=self.store,
                                  status=self.status, answers=self.answers, queued=self.queued, input_box=self.input,
                                  controls=self.controls, round_gate=self.round_gate, details=self.details,
                                  recordings=self.recordings, stats=self.stats, worker=self.worker)
        self.send_button, self.stop_button = QPushButton("Send"), QPushButton("Stop")
        self.chat.token_hovered.connect(self.chat_flow.show_token)
        self.chat.token_clicked.connect(self.chat_flow.show_token)
        self.chat.action.connect(self.chat_flow.message_action)
        self.send_button.clicked.connect(self.chat_flow.send)
        self.stop_button.clicked.connect(self.chat_flow.stop)
        self.buttons = SendButtons(self.model, self.queued, self.send_button, self.stop_button, self.controls)
        # deleted after the engine has stopped (close deletes the last owned first)
        self._owned[:0] = [self.engine.thread, self.worker]
        self.own(self.queued.note, self.chat_flow, self.send_button, self.stop_button)

    def close(self) -> None:
        self.answers.stop()
        self.engine.stop()
        super().close()


class ModelRig(ChatRig):
    """The model flow with its collaborators, loading through a ModelLoader in the engine thread (and the
    compile flow it hands compiled steps to); the chat rig's parts around it."""

    def __init__(self, settings) -> None:
        super().__init__()
        self.settings = settings
        self.loader = ModelLoader()
        self.distill_worker = DistillWorker()
        for worker in (self.loader, self.distill_worker):
            worker.moveToThread(self.engine.thread)
        self.compile_flow = CompileFlow(self.model, self.worker, self.controls, self.status, self.stats)
        self.model_flow = ModelFlow(model=self.model, conversation=self.conversation, settings=settings,
                                    status=self.status, stats=self.stats, controls=self.controls, step=self.step,
                                    details=self.details, queued=self.queued, compile_flow=self.compile_flow,
                                    loader=self.loader)
        for signal, slot in ((self.loader.progress, self.model_flow.load_progress),
                             (self.loader.loaded, self.model_flow.use_models),
                             (self.loader.failed, self.model_flow.load_failed),
                             *self.compile_flow.links(self.worker)):
            signal.connect(slot)
        self.model_flow.loaded.connect(lambda _result: self.chat_flow.release_queued())
        self.conversation.answer_ended.connect(lambda _index: self.model_flow.recheck_choice())
        self.conversation.answer_ended.connect(lambda _index: self.model_flow.check_machine())
        self._owned[:0] = [self.loader, self.distill_worker]
        self.own(self.compile_flow, self.model_flow)

