"""Conversations from history: new chat, open, delete, and the exports."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from app.history import HistoryError

from .chat_view import ChatMessage
from .conversations import write_export
from .live_stats import rounds_from_stats
from .recording_flow import remove_recordings


class HistoryFlowMixin:
    def new_chat(self) -> None:
        if self.model.generating:
            return
        self.clear_chat()

    def clear_chat(self) -> None:
        """An empty chat, whatever runs (the local server starts each request's chat this way)."""
        self.recordings.close()
        self.conv_id = None
        self.editing = None
        self.chat.set_messages([])
        self.system_prompt.clear()
        self.stats.reset()
        self.step.clear()
        self.conversations.list.clearSelection()
        self.input.setFocus()

    def _conversation_deleted(self, conv_id: int, recordings: list[str]) -> None:
        remove_recordings(recordings)
        if conv_id != self.conv_id:
            return
        self.cancel.set()  # an answer into a deleted chat has nowhere to go
        self.conv_id = None
        if self.model.generating:
            self.worker.finished.connect(self.new_chat, Qt.ConnectionType.SingleShotConnection)
        else:
            self.new_chat()

    def open_conversation(self, conv_id: int) -> None:
        if self.model.generating or conv_id == self.conv_id:
            return
        self.recordings.close()
        try:
            info = self.store.conversation(conv_id)
            stored = self.store.messages(conv_id)
        except HistoryError as exc:
            self.show_banner(str(exc))
            return
        self.conv_id = conv_id
        self.editing = None
        self.system_prompt.setText(info.system_prompt)
        messages = []
        self.stats.reset()
        self.step.clear()
        for m in stored:
            if m.role == "system":
                continue
            messages.append(ChatMessage(m.role, m.content, list(m.tokens), dict(m.stats), m.partial, m.id))
            if m.role == "assistant":
                self.stats.new_message()
                self.stats.add(rounds_from_stats(m.stats))
                if m.stats.get("baseline_step"):
                    self.stats.set_baseline(m.stats["baseline_step"])
        self.chat.set_messages(messages)
        self.conversations.refresh(conv_id)

    def _export_conversation(self, kind: str) -> None:
        if self.conv_id is None:
            self.statusBar().showMessage(self.tr("Nothing to export yet"), 3000)
            return
        self.conversations.export(self.conv_id, kind)

    def export_conversation_to(self, path: Path, kind: str) -> None:
        write_export(self.store, self.conv_id, path, kind)

    def _export_plots(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Export plots into folder"))
        if folder:
            written = self.plots.export(Path(folder))
            self.statusBar().showMessage(self.tr("Wrote {0} files to {1}").format(len(written), folder), 4000)
