"""The conversation list: search by title, open, rename, delete, export. Reads and writes the
HistoryStore directly and follows the open Conversation (app/session): it marks the one shown and lists
a chat once its first message is saved; the window is told which conversation to show."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.history import export
from app.history.store import HistoryStore
from app.session.conversation import Conversation


class ConversationsPanel(QWidget):
    opened = Signal(int)  # conversation id
    deleted = Signal(int, list)  # conversation id, the recording file names its answers named
    new_requested = Signal()

    def __init__(self, store: HistoryStore, conversation: Conversation, parent=None) -> None:
        super().__init__(parent)
        self.store, self.conversation = store, conversation
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        self.new_button = QPushButton(self.tr("New chat"))
        self.new_button.setObjectName("primary")
        self.new_button.clicked.connect(self.new_requested)
        self.search = QLineEdit(placeholderText=self.tr("Search titles…"), clearButtonEnabled=True)
        self.search.textChanged.connect(self.refresh)
        self.list = QListWidget()
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu)
        self.list.itemActivated.connect(lambda item: self.opened.emit(item.data(Qt.ItemDataRole.UserRole)))
        self.list.itemClicked.connect(lambda item: self.opened.emit(item.data(Qt.ItemDataRole.UserRole)))
        layout.addWidget(self.new_button)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        self.refresh()
        conversation.opened.connect(self._opened)
        conversation.message_added.connect(lambda _index: self.refresh(conversation.conv_id))
        conversation.answer_ended.connect(lambda _index: self.refresh(conversation.conv_id))

    def _opened(self) -> None:
        if self.conversation.conv_id is None:
            self.list.clearSelection()  # a new chat is listed once it has a message
        else:
            self.refresh(self.conversation.conv_id)

    def refresh(self, current: int | None = None) -> None:
        if not isinstance(current, int):
            current = self.current_id()
        self.list.blockSignals(True)
        self.list.clear()
        for info in self.store.list_conversations(self.search.text()):
            item = QListWidgetItem(info.title or self.tr("Untitled"))
            item.setData(Qt.ItemDataRole.UserRole, info.id)
            item.setToolTip(self.tr("{0} messages").format(info.message_count))
            self.list.addItem(item)
            if info.id == current:
                item.setSelected(True)
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def current_id(self) -> int | None:
        item = self.list.currentItem()
        return item.data(Qt.ItemDataRole.UserRole) if item is not None else None

    def _menu(self, pos) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        conv_id = item.data(Qt.ItemDataRole.UserRole)
        menu = QMenu(self)
        menu.addAction(self.tr("Rename…"), lambda: self.rename(conv_id))
        menu.addAction(self.tr("Export as HTML…"), lambda: self.export(conv_id, "html"))
        menu.addAction(self.tr("Export as Markdown…"), lambda: self.export(conv_id, "md"))
        menu.addSeparator()
        menu.addAction(self.tr("Delete"), lambda: self.delete(conv_id))
        menu.exec(self.list.mapToGlobal(pos))

    def rename(self, conv_id: int) -> None:
        info = self.store.conversation(conv_id)
        title, ok = QInputDialog.getText(self, self.tr("Rename conversation"), self.tr("Title:"), text=info.title)
        if ok and title.strip():
            self.store.rename(conv_id, title.strip())
            self.refresh()

    def delete(self, conv_id: int) -> None:
        info = self.store.conversation(conv_id)
        answer = QMessageBox.question(self, self.tr("Delete conversation"), self.tr("Delete “{0}”? This cannot be undone.").format(info.title))
        if answer == QMessageBox.StandardButton.Yes:
            recordings = [m.stats["recording"] for m in self.store.messages(conv_id) if m.stats.get("recording")]
            self.store.delete(conv_id)
            self.refresh()
            self.deleted.emit(conv_id, recordings)

    def export(self, conv_id: int, kind: str) -> None:
        info = self.store.conversation(conv_id)
        suffix = {"html": self.tr("HTML page (*.html)"), "md": self.tr("Markdown (*.md)")}[kind]
        name, _ = QFileDialog.getSaveFileName(self, self.tr("Export conversation"), f"{info.title}.{kind}", suffix)
        if name:
            write_export(self.store, conv_id, Path(name), kind)


def write_export(store: HistoryStore, conv_id: int, path: Path, kind: str) -> None:
    info, messages = store.conversation(conv_id), store.messages(conv_id)
    text = export.to_html(info, messages) if kind == "html" else export.to_markdown(info, messages)
    path.write_text(text, encoding="utf-8")
