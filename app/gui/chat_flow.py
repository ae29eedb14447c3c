"""The chat flow: send a message, stream the answer from the worker into the view and the
statistics, end it (saved to history), regenerate, edit, copy."""

from __future__ import annotations

import threading

from PySide6.QtGui import QGuiApplication

from app.engine import FinishedEvent, RoundEvent, TokenEvent
from app.history import HistoryError, StoredToken
from app.session import State

from .chat_view import ChatMessage
from .recording_flow import remove_recordings, target_header
from .worker import GenerationRequest

BASELINE_STEPS = 6  # target-only steps timed before a message, for the measured speedup
BASELINE_EVERY = 4  # re-measure every this many messages (prompt length and machine load drift)


class ChatFlowMixin:
    def send(self) -> None:
        text = self.input.toPlainText().strip()
        model = self.model
        if text and self.queued.accepting and not model.generating and not model.training and not self.queued.waiting:
            self.queued.hold(text)  # app/gui/queued_question.py: sent when the load ends
            self._sync_buttons()
            return
        if not text or not model.idle or model.target is None:
            return
        if self.editing is not None:
            self._truncate(self.editing)
            self.editing = None
            self.hide_banner()
        try:
            if self.conv_id is None:
                title = " ".join(text.split())[:60]
                self.conv_id = self.store.create_conversation(title, self.system_prompt.text().strip())
            message_id = self.store.add_message(self.conv_id, "user", text)
        except HistoryError as exc:  # e.g. the disk is full: say so, and answer anyway
            self.show_banner(self.tr("Could not save the message: {0}").format(exc))
            message_id = None
        self.chat.add_message(ChatMessage("user", text, db_id=message_id))
        self.input.clear()
        self.conversations.refresh(self.conv_id)
        self._start_answer()

    def _start_answer(self) -> None:
        system = self.system_prompt.text().strip()
        turns = ([{"role": "system", "content": system}] if system else []) + [
            {"role": m.role, "content": m.text} for m in self.chat.messages
        ]
        try:
            input_ids = self.model.target.encode_chat(turns)
        except Exception as exc:  # a template that rejects the turns is the model's problem, not a crash
            self.show_banner(self.tr("The chat template failed: {0}").format(exc))
            return
        stats = {"target": target_header(self.model.target.name, self.model.target.kernels), "draft": self._draft_name()}
        self.answer_index = self.chat.add_message(ChatMessage("assistant", stats=stats, streaming=True))
        self.stats.new_message()
        self.cancel = threading.Event()
        measure = self.stats.baseline_step is None or self.messages_since_baseline >= BASELINE_EVERY
        self.messages_since_baseline = 0 if measure else self.messages_since_baseline + 1
        params = self.round_gate.wrap(self.controls.params, self.cancel)  # pausable between rounds
        request = GenerationRequest(self.model.target, input_ids, self.model.drafter, params, self.cancel,
                                    baseline_steps=BASELINE_STEPS if measure else 0, static=self.model.static,
                                    observe=self.model.auto.observe if self.model.auto is not None else None)
        self.step.clear()
        self.step.set_live(True)
        self.model.begin(State.GENERATING)
        self._sync_buttons()
        self.progress_label.setText(self.tr("Timing target-only steps …") if measure else self.tr("Generating …"))
        self.recordings.begin(turns, self.controls.params())
        self.flush_timer.start()
        self._generate.emit(request)

    def stop(self) -> None:
        if self.model.generating and self.recordings.player is not None:
            self.recordings.stop_replay()
        elif self.model.generating:
            self.cancel.set()
        elif self.queued.waiting:
            self.queued.give_back()
            self._sync_buttons()
        elif self.editing is not None:
            self.editing = None
            self.input.clear()
            self.hide_banner()

    def _flush(self) -> None:
        if not self.pending:
            return
        batch = self.pending[:]
        self.pending.clear()
        tokens = [StoredToken.from_event(e) for e in batch if isinstance(e, TokenEvent)]
        rounds = [e for e in batch if isinstance(e, RoundEvent)]
        if tokens:
            self.chat.append_tokens(self.answer_index, tokens)
        self.step.add_events(batch)
        if rounds:
            self.stats.add(rounds)
            self._update_status()
            self.progress_label.setText(self.tr("Generating · round {0}").format(rounds[-1].round + 1))

    def _on_events(self, batch: list) -> None:
        self.pending.extend(batch)  # rendered by the flush timer, in the GUI thread
        self.recordings.events(batch)

    def _on_baseline(self, seconds: float) -> None:
        self.stats.set_baseline(seconds)
        self.recordings.baseline(seconds)

    def _on_finished(self, fin: FinishedEvent) -> None:
        self.finish_answer(fin, self.recordings.answer_params())

    def _on_failed(self, message: str) -> None:
        self.fail_answer(message, self.recordings.answer_params())

    def finish_answer(self, fin: FinishedEvent, params) -> None:
        """The engine's FinishedEvent for the answer streaming (params: what it was decoded with)."""
        self.recordings.finished(fin)
        self._flush()
        self._end_answer(partial=fin.reason == "cancelled", fin=fin, params=params)
        reasons = {"eos": self.tr("end of answer"), "length": self.tr("max new tokens reached"),
                   "cancelled": self.tr("stopped"), "context": self.tr("context full")}
        self.progress_label.setText(self.tr("Done · {0}").format(reasons.get(fin.reason, fin.reason)))

    def fail_answer(self, message: str, params) -> None:
        self._flush()
        self._end_answer(partial=True, fin=None, error=message, params=params)
        self.progress_label.setText(self.tr("Failed"))
        self.show_banner(self.tr("Generation failed: {0}").format(message))

    def _end_answer(self, partial: bool, fin: FinishedEvent | None, error: str | None = None, params=None) -> None:
        """fin is None when the engine failed (error says why) or was abandoned by closing the window.
        params: what the answer was decoded with (default: the controls', or the replayed recording's)."""
        self.flush_timer.stop()
        self.step.set_live(False)
        message = self.chat.messages[self.answer_index]
        message.partial = partial
        message.content = message.text
        new_tokens = sum(1 for t in message.tokens if t.status != "rejected")
        message.stats.update(self.stats.message_record(fin, new_tokens, params or self.recordings.answer_params()))
        if error is not None:
            message.stats["error"] = error  # finish_reason "error": the footer and exports say it failed
        elif fin is None:
            message.stats["finish_reason"] = "cancelled"
        self.recordings.end(message)
        if self.conv_id is not None:
            try:
                message.db_id = self.store.add_message(
                    self.conv_id, "assistant", message.content, message.tokens, message.stats, partial
                )
            except HistoryError as exc:  # e.g. the conversation was deleted meanwhile, or the disk is full
                self.show_banner(self.tr("The answer was not saved: {0}").format(exc))
        self.chat.finish_message(self.answer_index)  # adds the footer: stats and actions
        self.recheck_choice()
        self.conversations.refresh(self.conv_id)
        self._update_status()
        self.model.end(State.GENERATING)  # work that waited for this answer (a draft swap) starts now
        self._sync_buttons()

    def _truncate(self, index: int) -> None:
        """Drop message `index` and everything after it, on screen and in the store."""
        message = self.chat.messages[index]
        if self.conv_id is not None and message.db_id is not None:
            self.store.delete_from(self.conv_id, message.db_id)
        remove_recordings([m.stats["recording"] for m in self.chat.messages[index:] if m.stats.get("recording")])
        self.chat.set_messages(self.chat.messages[:index])

    def regenerate(self) -> None:
        last = len(self.chat.messages) - 1
        if not self.model.idle or self.model.target is None or last < 0:
            return
        if self.chat.messages[last].role == "assistant":
            self._truncate(last)
        if self.chat.messages and self.chat.messages[-1].role == "user":
            self._start_answer()

    def copy_last_answer(self) -> None:
        answers = [i for i, m in enumerate(self.chat.messages) if m.role == "assistant"]
        if answers:
            self._message_action("copy", answers[-1])

    def _message_action(self, name: str, index: int) -> None:
        if name == "copy":
            QGuiApplication.clipboard().setText(self.chat.messages[index].text)
            self.statusBar().showMessage(self.tr("Answer copied"), 2000)
        elif name == "regenerate" and index == len(self.chat.messages) - 1:
            self.regenerate()
        elif name == "replay" and not self.model.generating:
            self.recordings.replay(index)
        elif name == "edit" and not self.model.generating:
            self.editing = index
            self.input.setPlainText(self.chat.messages[index].content)
            self.input.setFocus()
            self.show_banner(self.tr("Editing an earlier message: Send replaces it and everything after it (Esc cancels)."),
                             info=True)

    def _show_token(self, message: int, index: int) -> None:
        if message < len(self.chat.messages) and index < len(self.chat.messages[message].tokens):
            self.details.show_token(self.chat.messages[message].tokens[index])

    def _system_prompt_edited(self) -> None:
        if self.conv_id is not None:
            self.store.set_system_prompt(self.conv_id, self.system_prompt.text().strip())
