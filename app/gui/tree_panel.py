"""The step-through's view of a token-tree round: every node under its parent, the accepted path
highlighted, rejected siblings struck through with the coin u against p′(x) and the residual mass
p′ keeps after each rejection, untested nodes greyed, then the corrected or bonus token."""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout

from app.engine.events import RoundEvent
from app.history import palette

from .step_panels import short

MAX_LINES = 12  # tree lines shown above the cards before the panel scrolls
TREE_MIN_WIDTH = 400  # beside the cards, no narrower: a tested node's line (p, u against p′, residual) reads whole


class TreePanel(QFrame):
    """Shown only for a round that verified a tree (RoundEvent.tree_tokens); hidden for a chain."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("steppanel")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.outer = layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 4, 6, 4)
        layout.setSpacing(2)  # with the margins, little height: above six cards at 1366×768 the title alone fits
        self.title = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        self.body = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=False)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A tree of 16 nodes at 28 pt is taller than the step-through: its lines scroll, the rest stays put.
        self.lines = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        self.lines.setWidget(self.body)
        layout.addWidget(self.title)
        layout.addWidget(self.lines, 1)
        layout.addStretch()  # what the whole tree leaves beside the cards, below it
        self.beside = False  # beside the cards (the step-through's whole height) or above them
        self.setVisible(False)

    def set_point_size(self, pt: int) -> None:
        """The tree's text follows the window's text size (28 pt on stage): a tree is read, not plotted.
        A style sheet, since the application's style sheet stops fonts set on a parent from propagating."""
        self.setStyleSheet(f"QLabel {{ font-size: {pt}pt; }}")
        self._fit()

    def set_beside(self, beside: bool) -> None:
        self.beside = beside
        self._fit()

    def natural_width(self) -> int:
        """Wide enough for the longest line and a vertical scroll bar."""
        margins = self.outer.contentsMargins()
        return (self.body.sizeHint().width() + self.lines.verticalScrollBar().sizeHint().width()
                + margins.left() + margins.right() + 2 * self.frameWidth())

    def _fit(self) -> None:
        """At most the whole tree (above the cards, up to MAX_LINES lines) with room for a horizontal scroll bar;
        the step-through's split decides within that. Above six cards at 1366×768 the cards leave room for the
        title only: the split's handle opens the lines."""
        lines = self.body.text().count("<br>") + 1
        line = self.body.fontMetrics().lineSpacing()
        bar = self.lines.horizontalScrollBar().sizeHint().height()
        self.lines.setMinimumHeight(1)  # 0 would mean unset: a scroll area's own minimum is taller than that room
        self.lines.setMaximumHeight((lines if self.beside else min(lines, MAX_LINES)) * line + bar + 8)

    def show_round(self, r: RoundEvent, decode: Callable[[int], str]) -> None:
        self.setVisible(bool(r.tree_tokens))
        if not r.tree_tokens:
            return
        self.title.setText(self.tr("<b>Token tree</b>: {0} nodes verified in one pass, {1} accepted along the "
                                   "path").format(r.tree_nodes, len(r.tree_path)))
        self.body.setText(tree_html(r, decode, self.tr("u {0:.3f} ≥ p′ {1:.3f}, residual {2:.3f}"),
                                    self.tr("u {0:.3f} < p′ {1:.3f}"), self.tr("not tested"),
                                    self.tr("corrected"), self.tr("bonus")))
        self._fit()


def tree_html(r: RoundEvent, decode: Callable[[int], str], rejected: str, accepted: str, untested: str,
              corrected: str, bonus: str) -> str:
    """The tree as indented rich-text lines (depth-first, children in test order)."""
    tests = {node: (u, a, res) for node, u, a, res in
             zip(r.tree_tested, r.tree_u, r.tree_accept_prob, r.tree_residual, strict=True)}
    children: dict[int, list[int]] = {}
    for i, parent in enumerate(r.tree_parents):
        children.setdefault(parent, []).append(i)
    path = set(r.tree_path)
    lines: list[str] = []

    def visit(node: int, depth: int) -> None:
        token = html.escape(short(decode(r.tree_tokens[node]), 12))
        indent = f"{'&nbsp;' * 4 * depth}{'└ ' if depth else ''}"  # outside the strike-through
        head = f"<code>{token}</code> p {r.tree_p[node]:.3f}"
        if node in path:
            u, a, _ = tests[node]
            # escaped: the accepted test's "<" opened a tag that swallowed the line break and the next line
            line = f"<b style='color:{palette.ACCEPTED}'>{head}</b> · {html.escape(accepted.format(u, a))}"
        elif node in tests:
            u, a, res = tests[node]
            line = f"<s style='color:{palette.REJECTED}'>{head}</s> · {html.escape(rejected.format(u, a, res))}"
        else:
            line = f"<span style='color:gray'>{head} · {untested}</span>"
        lines.append(indent + line)
        for child in children.get(node, ()):
            visit(child, depth + 1)

    for root_child in children.get(-1, ()):
        visit(root_child, 0)
    stop = r.tree_path[-1] if r.tree_path else -1
    kind, color = (corrected, palette.CORRECTED) if children.get(stop) else (bonus, palette.BONUS)
    if r.next_token is not None:
        lines.append(f"⇒ <b style='color:{color}'>{kind}</b> <code>{html.escape(short(decode(r.next_token), 12))}</code>")
    return "<br>".join(lines)
