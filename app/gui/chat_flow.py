"""The chat flow: what the user does to the chat. Send a message (held while the models load), stop,
regenerate, edit an earlier message, copy, inspect a token; a typed answer starts here and streams
through the answer flow."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication

from app.history import HistoryError
from app.session.conversation import LIVE, AnswerSource, Message

from .answer_header import draft_name, target_header
from .answer_recorder import remove_recordings
from .worker import GenerationRequest

if TYPE_CHECKING:
    from PySide6.QtWidgets import QPlainTextEdit

    from app.history import HistoryStore
    from app.session import ChatModel, Conversation

    from .answer_flow import AnswerFlow
    from .controls import ControlsPanel
    from .live_stats import LiveStats
    from .queued_question import QueuedQuestion
    from .recording_flow import RecordingFlow
    from .round_gate import RoundGate
    from .status import WindowStatus
    from .token_details import TokenDetails
    from .worker import GenerationWorker

BASELINE_STEPS = 6  # target-only steps timed before a message, for the measured speedup
BASELINE_EVERY = 4  # re-measure every this many messages (prompt length and machine load drift)


class ChatFlow(QObject):
    """What the user does to the chat; each collaborator is named where it is handed over."""

    _generate = Signal(object)  # queued into the engine thread, where the worker lives

    def __init__(self, *, conversation: Conversation, model: ChatModel, store: HistoryStore, status: WindowStatus,
                 answers: AnswerFlow, queued: QueuedQuestion, input_box: QPlainTextEdit, controls: ControlsPanel,
                 round_gate: RoundGate, details: TokenDetails, recordings: RecordingFlow, stats: LiveStats,
                 worker: GenerationWorker, parent: QObject | None = None) -> None:
        """answers: the flow a typed answer streams through; queued: the question held while models load;
        controls: the decoding controls an answer reads every round; round_gate: the step-through's pause;
        details: the token inspector; recordings: which replay an answer; stats: the live statistics (whose
        baseline step an answer reuses); worker: the engine's, which decodes."""
        super().__init__(parent)
        self.conversation, self.model, self.store, self.status = conversation, model, store, status
        self.answers, self.queued, self.recordings, self.stats = answers, queued, recordings, stats
        self.input, self.controls, self.round_gate, self.details = input_box, controls, round_gate, details
        self.editing: int | None = None  # the earlier message being edited
        self.messages_since_baseline = 0
        self._generate.connect(worker.start)
        conversation.opened.connect(self._forget_edit)

    def send(self) -> None:
        text = self.input.toPlainText().strip()
        model, queued = self.model, self.queued
        if text and queued.accepting and not model.generating and not model.training and not queued.waiting:
            queued.hold(text)  # app/gui/queued_question.py: sent when the load ends
            return
        if not text or not model.idle or model.target is None:
            return
        if self.editing is not None:
            self._truncate(self.editing)
            self.editing = None
            self.status.hide_banner()
        conversation = self.conversation
        try:
            if conversation.conv_id is None:
                title = " ".join(text.split())[:60]
                conversation.conv_id = self.store.create_conversation(title, conversation.system_prompt.strip())
            message_id = self.store.add_message(conversation.conv_id, "user", text)
        except HistoryError as exc:  # e.g. the disk is full: say so, and answer anyway
            self.status.show_banner(self.tr("Could not save the message: {0}").format(exc))
            message_id = None
        conversation.add(Message("user", text, db_id=message_id))
        self.input.clear()
        self._answer()

    def release_queued(self) -> None:
        """The models are ready: send the held question, unless the window is busy (an example went first);
        then it goes back into the input box. Still held while the compile warm-up that follows a load runs."""
        text = self.queued.release(still_loading=self.model.loading)
        if text is None:
            return
        box = self.input
        typed = box.toPlainText()  # typed while the question waited: kept
        box.setPlainText(text)
        self.send()
        if box.toPlainText():  # not sent (busy): both stay in the box
            box.setPlainText(text + ("\n" + typed if typed.strip() else ""))
        else:
            box.setPlainText(typed)

    def _answer(self) -> None:
        """A live answer to the conversation so far."""
        model, target, turns = self.model, self.model.target, self.conversation.turns()
        assert target is not None  # send and regenerate answer only with a pair loaded
        try:
            input_ids = target.encode_chat(turns)
        except Exception as exc:  # a template that rejects the turns is the model's problem, not a crash
            self.status.show_banner(self.tr("The chat template failed: {0}").format(exc))
            return
        cancel = threading.Event()
        measure = self.stats.baseline_step is None or self.messages_since_baseline >= BASELINE_EVERY
        self.messages_since_baseline = 0 if measure else self.messages_since_baseline + 1
        # The controls read every round, with the pair's live γ while γ is on auto; a step timed earlier in this
        # chat is told to a controller made since.
        answer = model.answer(self.controls.params, gamma_auto=self.controls.gamma_is_auto,
                              step=None if measure else self.stats.baseline_step)
        source = AnswerSource(LIVE, target_header(target.name, target.kernels), draft_name(model.drafter),
                              answer.params, cancel, turns=turns)
        request = GenerationRequest(answer, input_ids, cancel, baseline_steps=BASELINE_STEPS if measure else 0,
                                    gate=self.round_gate)  # pausable between rounds
        self.answers.begin(source)
        self.status.say(self.tr("Timing target-only steps …") if measure else self.tr("Generating …"))
        self._generate.emit(request)

    def stop(self) -> None:
        """Stop (Esc): ends the answer streaming (a replay where it is), else gives a queued question back,
        else cancels an edit."""
        if self.model.generating and self.recordings.replaying():
            self.recordings.stop_replay()
        elif self.model.generating:
            self.answers.stop()
        elif self.queued.waiting:
            self.queued.give_back()
        elif self.editing is not None:
            self.editing = None
            self.input.clear()
            self.status.hide_banner()

    def _truncate(self, index: int) -> None:
        """Drop message `index` and everything after it, on screen and in the store."""
        conversation = self.conversation
        message = conversation.messages[index]
        if conversation.conv_id is not None and message.db_id is not None:
            self.store.delete_from(conversation.conv_id, message.db_id)
        dropped = conversation.truncate(index)
        remove_recordings([m.stats["recording"] for m in dropped if m.stats.get("recording")])

    def _forget_edit(self) -> None:
        self.editing = None

    def regenerate(self) -> None:
        messages = self.conversation.messages
        last = len(messages) - 1
        if not self.model.idle or self.model.target is None or last < 0:
            return
        if messages[last].role == "assistant":
            self._truncate(last)
        if self.conversation.messages and self.conversation.messages[-1].role == "user":
            self._answer()

    def copy_last_answer(self) -> None:
        answers = [i for i, m in enumerate(self.conversation.messages) if m.role == "assistant"]
        if answers:
            self.message_action("copy", answers[-1])

    def message_action(self, name: str, index: int) -> None:
        """A message's footer link: copy, regenerate, replay its recording, edit."""
        messages = self.conversation.messages
        if name == "copy":
            QGuiApplication.clipboard().setText(messages[index].text)
            self.status.flash(self.tr("Answer copied"), 2000)
        elif name == "regenerate" and index == len(messages) - 1:
            self.regenerate()
        elif name == "replay" and not self.model.generating:
            self.recordings.replay(messages[index])
        elif name == "edit" and not self.model.generating:
            self.editing = index
            self.input.setPlainText(messages[index].content)
            self.input.setFocus()
            self.status.show_banner(self.tr("Editing an earlier message: Send replaces it and everything after it "
                                            "(Esc cancels)."), info=True)

    def show_token(self, message: int, index: int) -> None:
        messages = self.conversation.messages
        if message < len(messages) and index < len(messages[message].tokens):
            self.details.show_token(messages[message].tokens[index])

    def system_prompt_edited(self) -> None:
        """The system prompt box lost focus or took Return: the stored conversation keeps it."""
        if self.conversation.conv_id is not None:
            self.store.set_system_prompt(self.conversation.conv_id, self.conversation.system_prompt.strip())

