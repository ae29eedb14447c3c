"""The answer streaming, whatever its source: begun once (begin), fed the engine's events as they arrive
(the worker's signals for a typed answer, a Player's for a replay, the server host's for a served one),
rendered in batches, and ended once: finished, failed, or cut short (Stop during a replay, a recording
that ends early, the window closing mid-round). Ended, it is saved to the history with its statistics and
its recording, and the conversation's answer_ended tells the rest of the window."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer

from app.engine import FinishedEvent, RoundEvent, TokenEvent
from app.history import HistoryError, StoredToken
from app.session import State
from app.session.conversation import Answer, AnswerSource

FLUSH_MS = 33  # token batches reach the view at most ~30 times a second


class AnswerFlow(QObject):
    """Handed the conversation (the answer streams into it), the chat model (GENERATING while it streams), the
    history store, the status sink, the live statistics and the step-through it feeds, and the recorder."""

    def __init__(self, conversation, model, store, status, stats, step, recorder, parent=None) -> None:
        super().__init__(parent)
        self.conversation, self.model, self.store, self.status = conversation, model, store, status
        self.stats, self.step, self.recorder = stats, step, recorder
        self.pending: list = []  # engine events not yet rendered
        self.flush_timer = QTimer(self, interval=FLUSH_MS, timeout=self.flush)

    def begin(self, source: AnswerSource) -> Answer:
        """An answer from `source` starts streaming into the conversation: the one start of every answer."""
        answer = self.conversation.begin_answer(source)
        self.stats.new_message()
        if source.baseline:
            self.stats.set_baseline(source.baseline)
        if source.decoding:  # the step-through follows the engine; a replay's rounds are only shown
            self.step.clear()
            self.step.set_live(True)
        if source.turns is not None:
            self.recorder.begin(source.turns, source.params())
        self.model.begin(State.GENERATING)  # a served answer runs while SERVING: it stays so
        self.flush_timer.start()
        return answer

    def stop(self) -> None:
        """Stop: the answer streaming ends at the engine's next round (a replay is cut by its player)."""
        if self.conversation.answer is not None:
            self.conversation.answer.source.cancel.set()

    # --- what the source emits -------------------------------------------------------------------
    def events(self, batch: list) -> None:
        self.pending.extend(batch)  # rendered by the flush timer, in the GUI thread
        self.recorder.events(batch)

    def baseline(self, seconds: float) -> None:
        self.stats.set_baseline(seconds)
        self.recorder.baseline(seconds)

    def finished(self, fin: FinishedEvent) -> None:
        self.recorder.finished(fin)
        self.flush()
        self._end(partial=fin.reason == "cancelled", fin=fin)
        reasons = {"eos": self.tr("end of answer"), "length": self.tr("max new tokens reached"),
                   "cancelled": self.tr("stopped"), "context": self.tr("context full")}
        self.status.say(self.tr("Done · {0}").format(reasons.get(fin.reason, fin.reason)))

    def failed(self, message: str) -> None:
        self.flush()
        self._end(partial=True, fin=None, error=message)
        self.status.say(self.tr("Failed"))
        self.status.show_banner(self.tr("Generation failed: {0}").format(message))

    def cut(self) -> None:
        """The answer ends where it is, partial: what was shown is what is kept."""
        self.flush()
        self._end(partial=True, fin=None)

    def flush(self) -> None:
        if not self.pending or self.conversation.answer is None:
            return
        batch = self.pending[:]
        self.pending.clear()
        tokens = [StoredToken.from_event(e) for e in batch if isinstance(e, TokenEvent)]
        rounds = [e for e in batch if isinstance(e, RoundEvent)]
        if tokens:
            self.conversation.append_tokens(self.conversation.answer.index, tokens)
        self.step.add_events(batch)
        if rounds:
            self.stats.add(rounds)
            self.status.refresh()
            self.status.say(self.tr("Generating · round {0}").format(rounds[-1].round + 1))

    def close(self) -> None:
        """The window closes: nothing is rendered any more."""
        self.flush_timer.stop()

    def _end(self, partial: bool, fin: FinishedEvent | None, error: str | None = None) -> None:
        """fin is None when the engine failed (error says why) or the answer was cut short."""
        self.flush_timer.stop()
        self.step.set_live(False)
        conversation = self.conversation
        answer = conversation.answer
        message = conversation.messages[answer.index]
        new_tokens = sum(1 for t in message.tokens if t.status != "rejected")
        stats = self.stats.message_record(fin, new_tokens, answer.source.params())
        if error is not None:
            stats["error"] = error  # finish_reason "error": the footer and exports say it failed
        elif fin is None:
            stats["finish_reason"] = "cancelled"
        recording = self.recorder.end(conversation.conv_id)
        if recording is not None:
            stats["recording"] = recording
        db_id = None
        if conversation.conv_id is not None:
            try:
                db_id = self.store.add_message(conversation.conv_id, "assistant", message.text, message.tokens,
                                               {**message.stats, **stats}, partial)
            except HistoryError as exc:  # e.g. the conversation was deleted meanwhile, or the disk is full
                self.status.show_banner(self.tr("The answer was not saved: {0}").format(exc))
        conversation.end_answer(partial, stats, db_id)  # its footer, the drafter recheck, the list, the status
        self.model.end(State.GENERATING)  # work that waited for this answer (a draft swap) starts now
