"""The conversation as a rich-text view: user turns as plain text, answers token by token in
their status format. It renders a Conversation (app/session), which holds the messages, and follows its
observers; it never owns them. Tokens are anchors ("tok:<message>:<index>") so hover and click can show
their details; per-message actions are anchors too ("act:<name>:<message>")."""

from __future__ import annotations

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QTextBlockFormat, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QTextBrowser

from app.history.records import StoredToken
from app.session.conversation import Conversation, Message

from .answer_header import answer_heading
from .theme import Colors
from .token_format import status_formats, status_of


class ChatView(QTextBrowser):
    token_hovered = Signal(int, int)  # message index, token index
    token_clicked = Signal(int, int)
    action = Signal(str, int)  # "copy" | "edit" | "regenerate", message index
    example_clicked = Signal(int)  # index into `examples`, shown while the chat is empty

    def __init__(self, colors: Colors, conversation: Conversation, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("chat")
        self.setOpenLinks(False)
        self.setUndoRedoEnabled(False)
        self.conversation = conversation
        self.examples: list[tuple[str, str]] = []  # (title, prompt)
        self.show_rejected = False
        self.colors = colors
        self._formats: dict[str, QTextCharFormat] = {}
        self._spans: dict[int, list[tuple[int, int]]] = {}  # message -> document range of each shown token
        self._footers: dict[int, int] = {}  # answer -> document position where its footer starts
        self._header_block: dict[int, int] = {}  # message -> number of its header's block
        self.set_colors(colors)
        self.anchorClicked.connect(self._on_anchor)
        self.highlighted.connect(self._on_hover)
        conversation.replaced.connect(self.render_all)
        conversation.message_added.connect(self._message_added)
        conversation.tokens_added.connect(self._tokens_added)
        conversation.answer_ended.connect(self._answer_ended)

    # --- appearance ---------------------------------------------------------------------------
    def set_colors(self, colors: Colors) -> None:
        self.colors = colors
        self._formats = status_formats(colors.text, colors.dark)
        self.render_all()

    def set_show_rejected(self, show: bool) -> None:
        self.show_rejected = show
        self.render_all()

    def set_examples(self, examples: list[tuple[str, str]]) -> None:
        """The example prompts (title, prompt) the empty chat offers."""
        self.examples = examples
        if not self.conversation.messages:
            self.render_all()

    # --- following the conversation -----------------------------------------------------------
    def _message_added(self, index: int) -> None:
        if index == 0:
            self.document().clear()  # the examples of the empty chat
        if index > 0 and index - 1 in self._footers:
            self._redo_footer(index - 1)  # it was last: it loses "Regenerate"
        self._render_message(index)

    def _answer_ended(self, index: int) -> None:
        """Add the footer (statistics, actions) of the last message once its answer has ended. Only the
        document's tail changes: re-rendering a long chat stalled the window for 100 ms and more."""
        self._redo_footer(index)
        self._scroll_to_end()

    def _redo_footer(self, index: int) -> None:
        """Rewrite the footer of message `index`, whose footer (if any) ends the document."""
        cursor = self._end_of_body()
        if index in self._footers:
            cursor.setPosition(self._footers.pop(index), QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
        message = self.conversation.messages[index]
        if message.role == "assistant" and not message.streaming and (message.stats or message.partial):
            self._insert_footer(cursor, index, message, self._muted())

    def _tokens_added(self, index: int, tokens: list[StoredToken]) -> None:
        """Tokens streamed onto the last message: drawn at the end of the document."""
        start = len(self.conversation.messages[index].tokens) - len(tokens)
        cursor = self._end_of_body()
        for offset, token in enumerate(tokens):
            self._insert_token(cursor, index, start + offset, token)
        self._scroll_to_end()

    def render_all(self) -> None:
        scroll = self.verticalScrollBar()
        at_end = scroll.value() >= scroll.maximum() - 4
        self.document().clear()
        self._spans.clear()
        self._footers.clear()
        self._header_block.clear()
        for i in range(len(self.conversation.messages)):
            self._render_message(i)
        if not self.conversation.messages and self.examples:
            self._render_examples()
        if at_end:
            self._scroll_to_end()

    def _render_message(self, index: int) -> None:
        message = self.conversation.messages[index]
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        first = cursor.position() == 0
        header = QTextBlockFormat()
        header.setTopMargin(0 if first else 14)
        header.setBottomMargin(2)
        if not first:
            cursor.insertBlock(header)
        else:
            cursor.setBlockFormat(header)
        self._header_block[index] = cursor.blockNumber()
        who = QTextCharFormat()
        who.setFontWeight(QFont.Weight.Bold)
        who.setForeground(QColor(self.colors.accent if message.role == "assistant" else self.colors.text))
        name = "SpecLens" if message.role == "assistant" else self.tr("You")
        cursor.insertText(name, who)
        muted = self._muted()
        if message.role == "assistant" and message.stats.get("draft"):
            line, tip = answer_heading(message.stats)
            room = self.viewport().width() - QFontMetrics(self.font()).horizontalAdvance(f"{name}     ") - 24
            pair = QTextCharFormat(muted)
            pair.setToolTip(tip)  # the full pair, its kernels and its draft (Qt shows a format's tooltip on hover)
            cursor.insertText("   " + QFontMetrics(self.font()).elidedText(line, Qt.TextElideMode.ElideRight,
                                                                          max(room, 120)), pair)
        body = QTextBlockFormat()
        body.setBottomMargin(2)
        body.setLineHeight(130, QTextBlockFormat.LineHeightTypes.ProportionalHeight.value)
        if message.role == "user":
            body.setBackground(QColor(self.colors.user_bubble))
            body.setLeftMargin(0)
        cursor.insertBlock(body)
        plain = QTextCharFormat()
        plain.setForeground(QColor(self.colors.text))
        if message.role == "user":
            cursor.insertText(message.content, plain)
        else:
            for i, token in enumerate(message.tokens):
                self._insert_token(cursor, index, i, token)
        if message.role == "assistant" and not message.streaming and (message.stats or message.partial):
            self._insert_footer(cursor, index, message, muted)
        elif message.role == "user":
            self._insert_actions(cursor, index, ("edit",), muted)

    def _render_examples(self) -> None:
        cursor = QTextCursor(self.document())
        muted = self._muted()
        cursor.insertText(self.tr("Try an example — one click sends it:"), muted)
        for i, (title, prompt) in enumerate(self.examples):
            block = QTextBlockFormat()
            block.setTopMargin(12)
            cursor.insertBlock(block)
            link = QTextCharFormat()
            link.setAnchor(True)
            link.setAnchorHref(f"ex:{i}:0")
            link.setForeground(QColor(self.colors.accent))
            link.setFontWeight(QFont.Weight.Bold)
            cursor.insertText(title, link)
            cursor.insertBlock(QTextBlockFormat())
            cursor.insertText(prompt, muted)

    def _insert_token(self, cursor: QTextCursor, index: int, i: int, token: StoredToken) -> None:
        if token.status == "rejected" and not self.show_rejected:
            return
        fmt = QTextCharFormat(self._formats[token.status])
        fmt.setAnchor(True)
        fmt.setAnchorHref(f"tok:{index}:{i}")
        start = cursor.position()
        cursor.insertText(token.text, fmt)
        if cursor.position() > start:  # special tokens have no text and are not shown
            self._spans.setdefault(index, []).append((start, cursor.position()))

    def _insert_footer(self, cursor: QTextCursor, index: int, message: Message, muted) -> None:
        st = message.stats
        parts = []
        if st.get("finish_reason") == "error":
            parts.append(self.tr("failed"))
        elif message.partial:
            parts.append(self.tr("stopped"))
        if st.get("new_tokens") is not None:
            parts.append(self.tr("{0} tokens").format(st["new_tokens"]))
        if st.get("tokens_per_second"):
            parts.append(f"{st['tokens_per_second']:.1f} tok/s")
        if st.get("alpha") is not None:
            parts.append(f"α {st['alpha']:.2f}")
        if st.get("gamma"):
            parts.append(f"γ {st['gamma']}")
        if st.get("speedup"):
            parts.append(self.tr("{0:.2f}× measured").format(st["speedup"]))
        self._footers[index] = cursor.position()
        block = QTextBlockFormat()
        block.setTopMargin(4)
        cursor.insertBlock(block)
        small = QTextCharFormat(muted)
        small.setFontPointSize(max(self.font().pointSizeF() * 0.85, 7))
        cursor.insertText(" · ".join(parts), small)
        actions: tuple[str, ...] = ("copy", "regenerate") if index == len(self.conversation.messages) - 1 else ("copy",)
        if st.get("recording"):
            actions += ("replay",)
        self._insert_actions(cursor, index, actions, small, new_block=False)

    def _insert_actions(self, cursor, index, actions, base, new_block=True) -> None:
        if new_block:
            cursor.insertBlock(QTextBlockFormat())
        for name in actions:
            fmt = QTextCharFormat(base)
            fmt.setFontPointSize(max(self.font().pointSizeF() * 0.85, 7))
            cursor.insertText("   ", fmt)
            fmt.setAnchor(True)
            fmt.setAnchorHref(f"act:{name}:{index}")
            fmt.setForeground(QColor(self.colors.accent))
            labels = {"copy": self.tr("Copy"), "regenerate": self.tr("Regenerate"), "edit": self.tr("Edit")}
            cursor.insertText(labels.get(name, name), fmt)

    def _muted(self) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(self.colors.muted))
        return fmt

    def _end_of_body(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _scroll_to_end(self) -> None:
        self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())

    # --- interaction --------------------------------------------------------------------------
    def _parse(self, url: QUrl) -> tuple[str, str, int] | None:
        parts = url.toString().split(":")
        if len(parts) != 3:
            return None
        try:
            return parts[0], parts[1], int(parts[2])
        except ValueError:
            return None

    def _on_anchor(self, url: QUrl) -> None:
        parsed = self._parse(url)
        if parsed is None:
            return
        kind, a, b = parsed
        if kind == "tok":
            self.token_clicked.emit(int(a), b)
        elif kind == "act":
            self.action.emit(a, b)
        elif kind == "ex":
            self.example_clicked.emit(int(a))

    def _on_hover(self, url: QUrl) -> None:
        parsed = self._parse(url)
        if parsed is not None and parsed[0] == "tok":
            self.token_hovered.emit(int(parsed[1]), parsed[2])

    def header_text(self, index: int) -> tuple[str, str]:
        """(the header line of message `index` as the document shows it, its tooltip): read back from the
        document, so tests check the display."""
        block = self.document().findBlockByNumber(self._header_block.get(index, -1))
        if not block.isValid():
            return "", ""
        it = block.begin()
        text, tip = block.text(), ""
        while not it.atEnd():
            tip = it.fragment().charFormat().toolTip() or tip
            it += 1
        return text, tip

    def statuses_shown(self, index: int) -> list[tuple[str, str | None]]:
        """(text, status read back from its format) per shown token of message `index`: what the
        document holds, so tests check the display rather than the stored records. Tokens that are
        only line breaks are left out: they have no glyph to colour."""
        shown = []
        cursor = QTextCursor(self.document())
        for start, end in self._spans.get(index, []):
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            text = cursor.selectedText().replace("\u2029", "\n")  # Qt's paragraph separator
            glyph = next((i for i, ch in enumerate(text) if ch != "\n"), None)
            if glyph is None:
                continue  # a bare line break shows no glyph, and Qt reports the next block's format for it
            cursor.setPosition(start + glyph)
            cursor.setPosition(start + glyph + 1, QTextCursor.MoveMode.KeepAnchor)
            shown.append((text, status_of(cursor.charFormat(), self._formats)))
        return shown
