"""The token inspector: what the engine decided for the token under the mouse or last clicked."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QTextBrowser

from app.history.records import StoredToken

from .token_format import describe

PROMPT = "Hover or click a token to inspect it."


class TokenDetails(QTextBrowser):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("details")
        self.setPlaceholderText(self.tr("Hover or click a token to inspect it."))
        self.decode: Callable[[int], str] = str

    def show_token(self, token: StoredToken) -> None:
        self.setHtml(describe(token, self.decode))
