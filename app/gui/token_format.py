"""How a token status looks in the chat, from the palette shared with the HTML export: colour
plus underline, weight or strike-out, so statuses stay distinguishable without colour."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QColor, QFont, QTextCharFormat

from app.history.palette import STATUSES, STYLES
from app.history.records import StoredToken

UNDERLINES = {
    "none": QTextCharFormat.UnderlineStyle.NoUnderline,
    "wavy": QTextCharFormat.UnderlineStyle.WaveUnderline,
    "dotted": QTextCharFormat.UnderlineStyle.DotLine,
}


# On a dark background the accepted blue (#0072B2) is too dim for a projector; Okabe–Ito's sky
# blue keeps the palette colour-blind safe.
DARK_COLORS = {"accepted": "#56B4E9"}


def status_format(status: str, text_color: str, dark: bool = False) -> QTextCharFormat:
    style = STYLES[status]
    color = QColor((DARK_COLORS.get(status) if dark else None) or style.color or text_color)
    fmt = QTextCharFormat()
    fmt.setForeground(color)
    fmt.setUnderlineStyle(UNDERLINES[style.underline])
    if style.underline != "none":
        fmt.setUnderlineColor(color)
    fmt.setFontWeight(QFont.Weight.Bold if style.bold else QFont.Weight.Normal)
    fmt.setFontStrikeOut(style.strike)
    return fmt


def status_formats(text_color: str, dark: bool = False) -> dict[str, QTextCharFormat]:
    return {status: status_format(status, text_color, dark) for status in STATUSES}


def status_of(fmt: QTextCharFormat, formats: dict[str, QTextCharFormat]) -> str | None:
    """The status whose look `fmt` carries, read back from the document, so tests check what
    is displayed rather than what was stored."""
    for status, ref in formats.items():
        if (
            fmt.foreground().color() == ref.foreground().color()
            and fmt.underlineStyle() == ref.underlineStyle()
            and fmt.fontStrikeOut() == ref.fontStrikeOut()
            and fmt.fontWeight() == ref.fontWeight()
        ):
            return status
    return None


def status_label(status: str) -> str:
    """The status name as shown (translated); the history palette keeps the English one for exports."""
    return {
        "accepted": QCoreApplication.translate("Status", "accepted"),
        "corrected": QCoreApplication.translate("Status", "corrected"),
        "bonus": QCoreApplication.translate("Status", "bonus"),
        "target": QCoreApplication.translate("Status", "target"),
        "rejected": QCoreApplication.translate("Status", "rejected"),
    }.get(status, status)


def status_meaning(status: str) -> str:
    return {
        "accepted": QCoreApplication.translate("Status", "draft token kept by the min(1, p/q) test"),
        "corrected": QCoreApplication.translate("Status", "sampled from the residual max(0, p - q) after a rejection"),
        "bonus": QCoreApplication.translate("Status", "sampled from p after every draft token was accepted"),
        "target": QCoreApplication.translate("Status", "sampled from p with no draft (target-only decoding)"),
        "rejected": QCoreApplication.translate("Status", "draft token refused; not part of the answer"),
    }.get(status, STYLES[status].meaning)


def _prob(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def describe(token: StoredToken, decode=str) -> str:
    """Rich text for the inspector and tooltips: status, round, p(x), q(x), min(1, p/q), and for a
    corrected token the top entries of p, q and the residual it was drawn from."""
    style = STYLES[token.status]
    color = f" style='color:{style.color}'" if style.color else ""
    rows = [
        f"<b{color}>{status_label(token.status)}</b> &nbsp;<code>{_escape(repr(token.text))}</code>",
        f"<span>{status_meaning(token.status)}</span>",
        QCoreApplication.translate("TokenDetails", "token id {0} · round {1}").format(token.token_id, token.round + 1),
        f"p(x) = {_prob(token.p)} · q(x) = {_prob(token.q)}",
        f"min(1, p/q) = {_prob(token.accept_prob)}",
    ]
    if token.node is not None:  # q is one-hot on a tree's candidates: min(1, p/q) is p' after earlier siblings
        rows.append(QCoreApplication.translate("TokenDetails", "from the token tree: branch of node {0}").format(
            token.node + 1))
    if token.top is not None:
        residual = QCoreApplication.translate("TokenDetails", "residual")
        for label, entries in (("p", token.top.p), ("q", token.top.q), (residual, token.top.residual)):
            cells = ", ".join(f"<code>{_escape(repr(decode(tid)))}</code>&nbsp;{prob:.3f}" for tid, prob in entries)
            rows.append(QCoreApplication.translate("TokenDetails", "<b>top {0}:</b> {1}").format(label, cells))
    return "<br>".join(rows)
