"""The panels of the round step-through: one per drafted position (p and q bars, the coin u against
min(1, p/q)) and one for the round's last token (the residual at the first rejection, or p for the
bonus). Every pyqtgraph item is created once; showing another round only updates data."""

from __future__ import annotations

from collections.abc import Callable

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QSizePolicy, QVBoxLayout

from app.history import palette

from .plots import SHARE_TICKS, SHARE_TOP
from .theme import Colors

P_COLOR = palette.ACCEPTED  # blue: the target
Q_COLOR = "#E69F00"  # Okabe-Ito orange: the draft
RESIDUAL_COLOR = palette.CORRECTED
BONUS_COLOR = palette.BONUS
MAX_BARS = 8  # union of the top entries of p and q at one position
BAR_W = 0.38
CARD_MIN_WIDTH = 205  # six cards (γ 5 and the outcome) side by side at 1366 px, with no scroll bar


def short(text: str, limit: int = 8) -> str:
    """A token as a tick label: visible whitespace, cut to `limit` characters."""
    text = text.replace("\n", "⏎").replace(" ", "·") or "∅"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bar_plot(height: int, max_height: int | None = None) -> pg.PlotWidget:
    """height: fixed, or with max_height the least it shrinks to when the dock is short (it grows
    up to max_height), so the whole card stays visible instead of scrolling."""
    plot = pg.PlotWidget()
    plot.setMenuEnabled(False)
    plot.setMouseEnabled(False, False)
    plot.hideButtons()
    plot.setMinimumHeight(height)
    plot.setMaximumHeight(max_height or height)
    if max_height:  # its large default size hint would make the card scroll: take what is left
        plot.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
    plot.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # arrows belong to the step-through, not the plot
    plot.disableAutoRange()
    return plot


def _panel_layout(panel: QFrame) -> QVBoxLayout:
    """The framed card every step-through panel sits in."""
    panel.setObjectName("steppanel")
    panel.setFrameShape(QFrame.Shape.StyledPanel)
    panel.setMinimumWidth(CARD_MIN_WIDTH)
    layout = QVBoxLayout(panel)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.setSpacing(4)
    return layout


def _probability_plot() -> pg.PlotWidget:
    """Bars of probabilities on a fixed 0..1 axis, so rounds compare at a glance."""
    plot = _bar_plot(64, 240)
    plot.setYRange(0, SHARE_TOP, padding=0)
    plot.getAxis("left").setTicks(SHARE_TICKS)  # a short plot: labels every 0.2 would overprint
    plot.showGrid(y=True, alpha=0.2)
    return plot


class PositionPanel(QFrame):
    """One drafted position: what p and q gave the top tokens, and the uniform draw that decided."""

    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent)
        layout = _panel_layout(self)
        self.title = QLabel(textFormat=Qt.TextFormat.RichText)
        self.bars = _probability_plot()
        self.p_bars = pg.BarGraphItem(x=[], height=[], width=BAR_W, brush=P_COLOR, pen=None)
        self.q_bars = pg.BarGraphItem(x=[], height=[], width=BAR_W, brush=Q_COLOR, pen=None)
        self.marker = pg.ScatterPlotItem(symbol="t", size=12, brush=pg.mkBrush(colors.text), pen=None)
        for item in (self.p_bars, self.q_bars, self.marker):
            self.bars.addItem(item)
        self.numbers = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        # The coin: [0, min(1, p/q)) accepts, [min(1, p/q), 1) rejects; u lands in one of them.
        self.coin = _bar_plot(40)
        self.coin.setXRange(0, 1, padding=0.02)
        self.coin.setYRange(0, 1, padding=0)
        self.coin.getAxis("left").hide()
        self.accept_zone = pg.BarGraphItem(x0=[0], width=[0], y0=[0.15], height=[0.55], brush=P_COLOR, pen=None)
        self.reject_zone = pg.BarGraphItem(x0=[0], width=[1], y0=[0.15], height=[0.55],
                                           brush=pg.mkBrush(colors.border), pen=None)
        self.u_line = pg.InfiniteLine(pos=0.5, angle=90, pen=pg.mkPen(colors.text, width=3))
        self.u_mark = pg.ScatterPlotItem(symbol="t", size=14, brush=pg.mkBrush(colors.text), pen=None)
        for item in (self.accept_zone, self.reject_zone, self.u_line, self.u_mark):
            self.coin.addItem(item)
        for widget in (self.title, self.bars, self.numbers, self.coin):
            layout.addWidget(widget, 1 if widget is self.bars else 0)  # the bars take what height there is
        self.set_colors(colors)

    def set_colors(self, colors: Colors) -> None:
        for plot in (self.bars, self.coin):
            plot.setBackground(colors.base)
            for name in ("left", "bottom"):
                plot.getAxis(name).setPen(colors.muted)
                plot.getAxis(name).setTextPen(colors.text)
        self.reject_zone.setOpts(brush=pg.mkBrush(colors.border))
        self.marker.setBrush(pg.mkBrush(colors.text))
        self.u_mark.setBrush(pg.mkBrush(colors.text))
        self.u_line.setPen(pg.mkPen(colors.text, width=3))

    def show_position(self, i: int, x: int, top_p, top_q, p_x: float, q_x: float, ratio: float,
                      u: float | None, decode: Callable[[int], str]) -> None:
        """Position i (0-based) drafted x; u is None when an earlier position was already rejected."""
        ids = list(dict.fromkeys([x] + [t for t, _ in top_p] + [t for t, _ in top_q]))[:MAX_BARS]
        p, q = dict(top_p), dict(top_q)
        p[x], q[x] = p_x, q_x  # exact values for the drafted token even when outside the top entries
        xs = list(range(len(ids)))
        self.p_bars.setOpts(x=[k - BAR_W / 2 for k in xs], height=[p.get(t, 0.0) for t in ids])
        self.q_bars.setOpts(x=[k + BAR_W / 2 for k in xs], height=[q.get(t, 0.0) for t in ids])
        self.marker.setData([0], [min(1.0, max(p_x, q_x)) + 0.05])
        self.bars.setXRange(-0.6, max(len(ids), 4) - 0.4, padding=0)
        self.bars.getAxis("bottom").setTicks([[(k, short(decode(t))) for k, t in zip(xs, ids, strict=True)]])
        token = _escape(short(decode(x), 16))
        if u is None:
            verdict, color = self.tr("not tested (an earlier draft was rejected)"), palette.REJECTED
        elif u < ratio:
            verdict, color = self.tr("accepted"), palette.ACCEPTED
        else:
            verdict, color = self.tr("rejected"), palette.CORRECTED
        self.title.setText(
            self.tr("<b>Position {0}</b> · x = <code>{1}</code> · <span style='color:{2}'><b>{3}</b></span>")
            .format(i + 1, token, color, verdict)
        )
        rows = [
            self.tr("<span style='color:{0}'>■ p(x) = {1:.4f}</span> &nbsp; "
                    "<span style='color:{2}'>■ q(x) = {3:.4f}</span>").format(P_COLOR, p_x, Q_COLOR, q_x),
            self.tr("p(x)/q(x) = {0:.4f} &nbsp; min(1, p/q) = <b>{1:.4f}</b>").format(
                p_x / q_x if q_x > 0 else float("inf"), ratio),
        ]
        if u is not None:
            sign = "&lt;" if u < ratio else "≥"
            rows.append(self.tr("u = <b>{0:.4f}</b> {1} {2:.4f} → {3}").format(u, sign, ratio, verdict))
        self.numbers.setText("<br>".join(rows))
        self.accept_zone.setOpts(x0=[0], width=[ratio])
        self.reject_zone.setOpts(x0=[ratio], width=[1 - ratio])
        self.u_line.setVisible(u is not None)
        self.u_mark.setData([u] if u is not None else [], [0.85] if u is not None else [])
        if u is not None:
            self.u_line.setValue(u)


class OutcomePanel(QFrame):
    """The round's last token: drawn from the residual after a rejection, or from p as a bonus."""

    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent)
        layout = _panel_layout(self)
        self.title = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        self.bars = _probability_plot()
        self.dist = pg.BarGraphItem(x=[], height=[], width=0.6, brush=RESIDUAL_COLOR, pen=None)
        self.marker = pg.ScatterPlotItem(symbol="t", size=12, brush=pg.mkBrush(colors.text), pen=None)
        self.bars.addItem(self.dist)
        self.bars.addItem(self.marker)
        self.note = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        for widget in (self.title, self.bars, self.note):
            layout.addWidget(widget, 1 if widget is self.bars else 0)
        self.set_colors(colors)

    def set_colors(self, colors: Colors) -> None:
        self.bars.setBackground(colors.base)
        for name in ("left", "bottom"):
            self.bars.getAxis(name).setPen(colors.muted)
            self.bars.getAxis(name).setTextPen(colors.text)
        self.marker.setBrush(pg.mkBrush(colors.text))

    def show_outcome(self, kind: str, position: int, token: int | None, top, emitted: bool,
                     decode: Callable[[int], str]) -> None:
        """kind: 'corrected' (residual at `position`), 'bonus' (p after every draft) or 'target'."""
        entries = list(top)
        if token is not None and token not in dict(entries):
            entries = entries[: MAX_BARS - 1] + [(token, 0.0)]  # drawn from below the top entries
        ids = [t for t, _ in entries][:MAX_BARS]
        xs = list(range(len(ids)))
        color = {"corrected": RESIDUAL_COLOR, "bonus": BONUS_COLOR}.get(kind, P_COLOR)
        self.dist.setOpts(x=xs, height=[v for _, v in entries][:MAX_BARS], brush=color)
        k = ids.index(token) if token in ids else None
        self.marker.setData([k] if k is not None else [], [min(1.0, entries[k][1]) + 0.05] if k is not None else [])
        self.bars.setXRange(-0.6, max(len(ids), 4) - 0.4, padding=0)
        self.bars.getAxis("bottom").setTicks([[(i, short(decode(t))) for i, t in zip(xs, ids, strict=True)]])
        name = _escape(short(decode(token), 16)) if token is not None else "–"
        if kind == "corrected":
            self.title.setText(
                self.tr("<b>Rejected at position {0}</b>: the next token comes from the residual "
                        "norm(max(p − q, 0)) → <span style='color:{1}'><b>{2}</b></span>")
                .format(position + 1, RESIDUAL_COLOR, name))
            note = self.tr("Where q gave more than p the residual is 0, so the mass the test took away "
                           "returns exactly where p needs it.")
        elif kind == "bonus":
            self.title.setText(
                self.tr("<b>All {0} drafts accepted</b>: a bonus token from p<sub>{1}</sub> → "
                        "<span style='color:{2}'><b>{3}</b></span>").format(position, position + 1, BONUS_COLOR, name))
            note = self.tr("The target's pass over the drafts already computed this distribution: "
                           "one token more for free.")
        else:
            self.title.setText(self.tr("<b>No draft</b>: the token comes from p → <b>{0}</b>").format(name))
            note = ""
        if not emitted:
            note += " " + self.tr("(drawn, but cut: the answer ended first)")
        self.note.setText(note.strip())


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
