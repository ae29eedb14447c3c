"""Conversations from history: new chat, open, delete, and the exports."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from app.history import HistoryError
from app.session.conversation import Message

from .answer_recorder import remove_recordings
from .conversations import write_export
from .live_stats import rounds_from_stats


class HistoryFlow(QObject):
    """Handed the conversation it opens and clears, the chat model (nothing opens while an answer streams),
    the history store, the status sink, the live statistics it rebuilds for an opened chat, the conversation
    list, the input box (a new chat takes the keyboard) and the plots it exports."""

    def __init__(self, conversation, model, store, status, stats, conversations, input_box, plots, parent=None) -> None:
        super().__init__(parent)
        self.conversation, self.model, self.store, self.status = conversation, model, store, status
        self.stats, self.conversations, self.input, self.plots = stats, conversations, input_box, plots
        self._clear_after_answer = False  # the open chat was deleted while its answer streamed
        conversation.answer_ended.connect(self._answer_ended)

    def new_chat(self) -> None:
        if self.model.generating:
            return
        self.clear_chat()

    def clear_chat(self) -> None:
        """An empty chat, whatever runs (the local server starts each request's chat this way)."""
        self.conversation.open()
        self.input.setFocus()

    def conversation_deleted(self, conv_id: int, recordings: list[str]) -> None:
        """The list deleted a conversation: its recordings go; the open chat goes too if it was that one."""
        remove_recordings(recordings)
        conversation = self.conversation
        if conv_id != conversation.conv_id:
            return
        conversation.conv_id = None  # an answer into a deleted chat has nowhere to go
        if conversation.answering:
            conversation.answer.source.cancel.set()
            self._clear_after_answer = True
        else:
            self.new_chat()

    def _answer_ended(self, _index: int) -> None:
        if self._clear_after_answer:
            self._clear_after_answer = False
            self.clear_chat()

    def open_conversation(self, conv_id: int) -> None:
        if self.model.generating or conv_id == self.conversation.conv_id:
            return
        try:
            info = self.store.conversation(conv_id)
            stored = self.store.messages(conv_id)
        except HistoryError as exc:
            self.status.show_banner(str(exc))
            return
        messages = [Message(m.role, m.content, list(m.tokens), dict(m.stats), m.partial, m.id)
                    for m in stored if m.role != "system"]
        self.conversation.open(conv_id, info.system_prompt, messages)  # the statistics start afresh
        for m in messages:
            if m.role == "assistant":
                self.stats.new_message()
                self.stats.add(rounds_from_stats(m.stats))
                if m.stats.get("baseline_step"):
                    self.stats.set_baseline(m.stats["baseline_step"])

    def export_conversation(self, kind: str) -> None:
        if self.conversation.conv_id is None:
            self.status.flash(self.tr("Nothing to export yet"), 3000)
            return
        self.conversations.export(self.conversation.conv_id, kind)

    def export_conversation_to(self, path: Path, kind: str) -> None:
        write_export(self.store, self.conversation.conv_id, path, kind)

    def export_plots(self) -> None:
        folder = QFileDialog.getExistingDirectory(self.plots, self.tr("Export plots into folder"))
        if folder:
            written = self.plots.export(Path(folder))
            self.status.flash(self.tr("Wrote {0} files to {1}").format(len(written), folder), 4000)
