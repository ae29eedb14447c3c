"""Conversations from history: new chat, open, delete, and the exports."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QFileDialog

from app.history import HistoryError

from .chat_view import ChatMessage
from .conversations import write_export
from .live_stats import rounds_from_stats
from .recording_flow import remove_recordings


class HistoryFlow(QObject):
    """Composed into the window, not a mixin: handed the chat model (nothing opens while an answer streams)
    and the window whose chat, statistics and conversation list it fills from the history store."""

    def __init__(self, window, model) -> None:
        super().__init__(window)
        self.window, self.model = window, model

    def new_chat(self) -> None:
        if self.model.generating:
            return
        self.clear_chat()

    def clear_chat(self) -> None:
        """An empty chat, whatever runs (the local server starts each request's chat this way)."""
        w = self.window
        w.recordings.close()
        w.chat_flow.conv_id = None
        w.chat_flow.editing = None
        w.chat.set_messages([])
        w.system_prompt.clear()
        w.stats.reset()
        w.step.clear()
        w.conversations.list.clearSelection()
        w.input.setFocus()

    def _conversation_deleted(self, conv_id: int, recordings: list[str]) -> None:
        w = self.window
        remove_recordings(recordings)
        if conv_id != w.chat_flow.conv_id:
            return
        w.chat_flow.cancel.set()  # an answer into a deleted chat has nowhere to go
        w.chat_flow.conv_id = None
        if self.model.generating:
            w.worker.finished.connect(self.new_chat, Qt.ConnectionType.SingleShotConnection)
        else:
            self.new_chat()

    def open_conversation(self, conv_id: int) -> None:
        w = self.window
        if self.model.generating or conv_id == w.chat_flow.conv_id:
            return
        w.recordings.close()
        try:
            info = w.store.conversation(conv_id)
            stored = w.store.messages(conv_id)
        except HistoryError as exc:
            w.show_banner(str(exc))
            return
        w.chat_flow.conv_id = conv_id
        w.chat_flow.editing = None
        w.system_prompt.setText(info.system_prompt)
        messages = []
        w.stats.reset()
        w.step.clear()
        for m in stored:
            if m.role == "system":
                continue
            messages.append(ChatMessage(m.role, m.content, list(m.tokens), dict(m.stats), m.partial, m.id))
            if m.role == "assistant":
                w.stats.new_message()
                w.stats.add(rounds_from_stats(m.stats))
                if m.stats.get("baseline_step"):
                    w.stats.set_baseline(m.stats["baseline_step"])
        w.chat.set_messages(messages)
        w.conversations.refresh(conv_id)

    def _export_conversation(self, kind: str) -> None:
        w = self.window
        if w.chat_flow.conv_id is None:
            w.statusBar().showMessage(self.tr("Nothing to export yet"), 3000)
            return
        w.conversations.export(w.chat_flow.conv_id, kind)

    def export_conversation_to(self, path: Path, kind: str) -> None:
        w = self.window
        write_export(w.store, w.chat_flow.conv_id, path, kind)

    def _export_plots(self) -> None:
        w = self.window
        folder = QFileDialog.getExistingDirectory(self.window, self.tr("Export plots into folder"))
        if folder:
            written = w.plots.export(Path(folder))
            w.statusBar().showMessage(self.tr("Wrote {0} files to {1}").format(len(written), folder), 4000)
