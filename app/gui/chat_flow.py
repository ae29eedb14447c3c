"""The chat flow: send a message, stream the answer from the worker into the view and the
statistics, end it (saved to history), regenerate, edit, copy."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QGuiApplication

from app.engine import FinishedEvent, RoundEvent, TokenEvent
from app.history import HistoryError, StoredToken
from app.session import State

from .chat_view import ChatMessage
from .recording_flow import remove_recordings, target_header
from .worker import GenerationRequest

BASELINE_STEPS = 6  # target-only steps timed before a message, for the measured speedup
BASELINE_EVERY = 4  # re-measure every this many messages (prompt length and machine load drift)
FLUSH_MS = 33  # token batches reach the view at most ~30 times a second


class ChatFlow(QObject):
    """Composed into the window, not a mixin: handed the chat model (the pair answering, the state) and the
    window whose widgets it drives. It owns the open conversation's id, the answer streaming and its cancel
    flag; the worker's signals, a replay (app/gui/recording_flow.py) and a served answer reach its slots."""

    def __init__(self, window, model) -> None:
        super().__init__(window)
        self.window, self.model = window, model
        self.conv_id: int | None = None  # the open conversation in the history
        self.answer_index = -1  # the streaming answer's message index
        self.editing: int | None = None  # the earlier message being edited
        self.cancel = threading.Event()  # the streaming answer's: Stop sets it
        self.pending: list = []  # engine events not yet rendered
        self.messages_since_baseline = 0
        self.flush_timer = QTimer(window, interval=FLUSH_MS, timeout=self._flush)

    def send(self) -> None:
        w = self.window
        text = w.input.toPlainText().strip()
        model = self.model
        if text and w.queued.accepting and not model.generating and not model.training and not w.queued.waiting:
            w.queued.hold(text)  # app/gui/queued_question.py: sent when the load ends
            w._sync_buttons()
            return
        if not text or not model.idle or model.target is None:
            return
        if self.editing is not None:
            self._truncate(self.editing)
            self.editing = None
            w.hide_banner()
        try:
            if self.conv_id is None:
                title = " ".join(text.split())[:60]
                self.conv_id = w.store.create_conversation(title, w.system_prompt.text().strip())
            message_id = w.store.add_message(self.conv_id, "user", text)
        except HistoryError as exc:  # e.g. the disk is full: say so, and answer anyway
            w.show_banner(self.tr("Could not save the message: {0}").format(exc))
            message_id = None
        w.chat.add_message(ChatMessage("user", text, db_id=message_id))
        w.input.clear()
        w.conversations.refresh(self.conv_id)
        self._start_answer()

    def _start_answer(self) -> None:
        w = self.window
        system = w.system_prompt.text().strip()
        turns = ([{"role": "system", "content": system}] if system else []) + [
            {"role": m.role, "content": m.text} for m in w.chat.messages
        ]
        try:
            input_ids = self.model.target.encode_chat(turns)
        except Exception as exc:  # a template that rejects the turns is the model's problem, not a crash
            w.show_banner(self.tr("The chat template failed: {0}").format(exc))
            return
        stats = {"target": target_header(self.model.target.name, self.model.target.kernels), "draft": w.model_flow._draft_name()}
        self.answer_index = w.chat.add_message(ChatMessage("assistant", stats=stats, streaming=True))
        w.stats.new_message()
        self.cancel = threading.Event()
        measure = w.stats.baseline_step is None or self.messages_since_baseline >= BASELINE_EVERY
        self.messages_since_baseline = 0 if measure else self.messages_since_baseline + 1
        params = w.round_gate.wrap(w.controls.params, self.cancel)  # pausable between rounds
        request = GenerationRequest(self.model.target, input_ids, self.model.drafter, params, self.cancel,
                                    baseline_steps=BASELINE_STEPS if measure else 0, static=self.model.static,
                                    observe=self.model.auto.observe if self.model.auto is not None else None)
        w.step.clear()
        w.step.set_live(True)
        self.model.begin(State.GENERATING)
        w._sync_buttons()
        w.progress_label.setText(self.tr("Timing target-only steps …") if measure else self.tr("Generating …"))
        w.recordings.begin(turns, w.controls.params())
        self.flush_timer.start()
        w._generate.emit(request)

    def stop(self) -> None:
        w = self.window
        if self.model.generating and w.recordings.player is not None:
            w.recordings.stop_replay()
        elif self.model.generating:
            self.cancel.set()
        elif w.queued.waiting:
            w.queued.give_back()
            w._sync_buttons()
        elif self.editing is not None:
            self.editing = None
            w.input.clear()
            w.hide_banner()

    def _flush(self) -> None:
        w = self.window
        if not self.pending:
            return
        batch = self.pending[:]
        self.pending.clear()
        tokens = [StoredToken.from_event(e) for e in batch if isinstance(e, TokenEvent)]
        rounds = [e for e in batch if isinstance(e, RoundEvent)]
        if tokens:
            w.chat.append_tokens(self.answer_index, tokens)
        w.step.add_events(batch)
        if rounds:
            w.stats.add(rounds)
            w._update_status()
            w.progress_label.setText(self.tr("Generating · round {0}").format(rounds[-1].round + 1))

    def _on_events(self, batch: list) -> None:
        w = self.window
        self.pending.extend(batch)  # rendered by the flush timer, in the GUI thread
        w.recordings.events(batch)

    def _on_baseline(self, seconds: float) -> None:
        w = self.window
        w.stats.set_baseline(seconds)
        w.recordings.baseline(seconds)

    def _on_finished(self, fin: FinishedEvent) -> None:
        w = self.window
        self.finish_answer(fin, w.recordings.answer_params())

    def _on_failed(self, message: str) -> None:
        w = self.window
        self.fail_answer(message, w.recordings.answer_params())

    def finish_answer(self, fin: FinishedEvent, params) -> None:
        """The engine's FinishedEvent for the answer streaming (params: what it was decoded with)."""
        w = self.window
        w.recordings.finished(fin)
        self._flush()
        self._end_answer(partial=fin.reason == "cancelled", fin=fin, params=params)
        reasons = {"eos": self.tr("end of answer"), "length": self.tr("max new tokens reached"),
                   "cancelled": self.tr("stopped"), "context": self.tr("context full")}
        w.progress_label.setText(self.tr("Done · {0}").format(reasons.get(fin.reason, fin.reason)))

    def fail_answer(self, message: str, params) -> None:
        w = self.window
        self._flush()
        self._end_answer(partial=True, fin=None, error=message, params=params)
        w.progress_label.setText(self.tr("Failed"))
        w.show_banner(self.tr("Generation failed: {0}").format(message))

    def _end_answer(self, partial: bool, fin: FinishedEvent | None, error: str | None = None, params=None) -> None:
        """fin is None when the engine failed (error says why) or was abandoned by closing the window.
        params: what the answer was decoded with (default: the controls', or the replayed recording's)."""
        w = self.window
        self.flush_timer.stop()
        w.step.set_live(False)
        message = w.chat.messages[self.answer_index]
        message.partial = partial
        message.content = message.text
        new_tokens = sum(1 for t in message.tokens if t.status != "rejected")
        message.stats.update(w.stats.message_record(fin, new_tokens, params or w.recordings.answer_params()))
        if error is not None:
            message.stats["error"] = error  # finish_reason "error": the footer and exports say it failed
        elif fin is None:
            message.stats["finish_reason"] = "cancelled"
        w.recordings.end(message)
        if self.conv_id is not None:
            try:
                message.db_id = w.store.add_message(
                    self.conv_id, "assistant", message.content, message.tokens, message.stats, partial
                )
            except HistoryError as exc:  # e.g. the conversation was deleted meanwhile, or the disk is full
                w.show_banner(self.tr("The answer was not saved: {0}").format(exc))
        w.chat.finish_message(self.answer_index)  # adds the footer: stats and actions
        w.model_flow.recheck_choice()
        w.conversations.refresh(self.conv_id)
        w._update_status()
        self.model.end(State.GENERATING)  # work that waited for this answer (a draft swap) starts now
        w._sync_buttons()

    def _truncate(self, index: int) -> None:
        """Drop message `index` and everything after it, on screen and in the store."""
        w = self.window
        message = w.chat.messages[index]
        if self.conv_id is not None and message.db_id is not None:
            w.store.delete_from(self.conv_id, message.db_id)
        remove_recordings([m.stats["recording"] for m in w.chat.messages[index:] if m.stats.get("recording")])
        w.chat.set_messages(w.chat.messages[:index])

    def regenerate(self) -> None:
        w = self.window
        last = len(w.chat.messages) - 1
        if not self.model.idle or self.model.target is None or last < 0:
            return
        if w.chat.messages[last].role == "assistant":
            self._truncate(last)
        if w.chat.messages and w.chat.messages[-1].role == "user":
            self._start_answer()

    def copy_last_answer(self) -> None:
        w = self.window
        answers = [i for i, m in enumerate(w.chat.messages) if m.role == "assistant"]
        if answers:
            self._message_action("copy", answers[-1])

    def _message_action(self, name: str, index: int) -> None:
        w = self.window
        if name == "copy":
            QGuiApplication.clipboard().setText(w.chat.messages[index].text)
            w.statusBar().showMessage(self.tr("Answer copied"), 2000)
        elif name == "regenerate" and index == len(w.chat.messages) - 1:
            self.regenerate()
        elif name == "replay" and not self.model.generating:
            w.recordings.replay(index)
        elif name == "edit" and not self.model.generating:
            self.editing = index
            w.input.setPlainText(w.chat.messages[index].content)
            w.input.setFocus()
            w.show_banner(self.tr("Editing an earlier message: Send replaces it and everything after it (Esc cancels)."),
                             info=True)

    def _show_token(self, message: int, index: int) -> None:
        w = self.window
        if message < len(w.chat.messages) and index < len(w.chat.messages[message].tokens):
            w.details.show_token(w.chat.messages[message].tokens[index])

    def _system_prompt_edited(self) -> None:
        w = self.window
        if self.conv_id is not None:
            w.store.set_system_prompt(self.conv_id, w.system_prompt.text().strip())
