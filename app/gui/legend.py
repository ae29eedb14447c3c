"""The status legend above the input: each status written in its own format, with its meaning."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QFrame, QTextBrowser

from app.history.palette import STATUSES

from .theme import Colors
from .token_format import status_formats, status_label, status_meaning


class Legend(QTextBrowser):
    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("legend")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setStyleSheet("background: transparent;")
        self.set_colors(colors)

    def set_colors(self, colors: Colors) -> None:
        self.document().clear()
        cursor = QTextCursor(self.document())
        formats = status_formats(colors.text, colors.dark)
        gap = QTextCharFormat()
        for i, status in enumerate(STATUSES):
            if i:
                cursor.insertText("     ", gap)
            fmt = formats[status]
            fmt.setToolTip(status_meaning(status))
            cursor.insertText(status_label(status), fmt)
        self.setFixedHeight(int(self.fontMetrics().height() * 1.9))
