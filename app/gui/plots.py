"""The statistics dock: four pyqtgraph plots whose items are created once and refreshed by a
4 Hz timer (only when the statistics changed); their PNG/SVG/CSV export is plot_export.py.

Readable at 1366×768: no plot is drawn shorter than MIN_PLOT_HEIGHT. In the window's side column (narrower
than GRID_FROM_PX) the plots stand in one column with their colour key on a second title line: all four
where the dock holds them at that height, otherwise two at a time behind two tabs. A wider dock shows them
as a 2×2 grid, or one row at a time behind the tabs. A notice about the speed sits in a row above the
plots, never over their data.

Axis repaints dominate pyqtgraph's cost, so no plot auto-ranges: ranges move in coarse steps
and each axis keeps a device-coordinate cache that is redrawn only when its range moves."""

from __future__ import annotations

import math
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QBoxLayout,
    QGraphicsItem,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabBar,
    QVBoxLayout,
    QWidget,
)

from app.history import palette

from .live_stats import LiveStats
from .plot_export import export_plots
from .theme import Colors

SLOW_AFTER_ROUNDS = 8  # measured points before a slowdown is called out (the first ones are noisy)
SLOW_BELOW = 0.97
REFRESH_MS = 250  # 4 Hz: live enough; every repaint holds the GIL the engine thread needs
BLUE, ORANGE, GREEN = palette.ACCEPTED, palette.CORRECTED, palette.BONUS
MIN_PLOT_HEIGHT = 200  # px per plot: a title row, ~120 px of data and the x axis with its label
GRID_FROM_PX = 760  # two plots side by side from this panel width: each then has a one-line title's room
SHARE_TICKS = [[(0.0, "0"), (0.5, "0.5"), (1.0, "1")], [(0.25, ""), (0.75, "")]]  # labels that never overprint
SHARE_TOP = 1.1  # room above 1 for its tick label
# Presentation titles: 20 pt where the plot is wide enough for them, else 15 pt (a title wider than its plot
# widens pyqtgraph's scene past the widget, and the right of the plot is cut off)
PRESENTATION_TITLE_PT, NARROW_TITLE_PT, WIDE_FROM_PX = 20, 15, 760


class PlotsPanel(QWidget):
    def __init__(self, stats: LiveStats, colors: Colors, parent=None) -> None:
        super().__init__(parent)
        self.stats = stats
        self.colors = colors
        self._drawn = -1
        self._notice: str | None = None
        self._gamma = 1
        self._ranged_gamma = 0  # gamma the x ranges were last set for
        self._title_size = "10pt"
        self._axis_styles: dict = {}  # the desktop axis fonts, kept while presenting
        self._titles: dict[str, str] = {}  # setTitle re-lays out the plot: only call it on change
        self._ranges: dict[tuple[str, str], tuple[float, float]] = {}
        self._presenting = False
        # 1: stacked (the side column, and presenting), or 2 side by side (a wide dock). Built stacked, as the
        # side column shows them: a one-line title drawn first in a plot too narrow for it widens pyqtgraph's
        # scene for good, and the right of the plot is cut off.
        self._columns = 1
        self._pages: list[list[str]] | None = None  # the plots behind each tab (one page: no tabs)
        self.outer = outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        outer.setSpacing(4)
        # Above the plots, never over their data: target-only by choice, or a draft predicted or measured
        # slower; the button offers speculation anyway (app/gui/speculation_offer.py).
        self.notice_row = QWidget(objectName="plot_notice_row", visible=False)
        self.notice_layout = row = QHBoxLayout(self.notice_row)
        row.setDirection(QBoxLayout.Direction.TopToBottom)  # stacked, as _arrange lays it out in the side column
        row.setContentsMargins(4, 0, 4, 0)
        self.notice = QLabel(wordWrap=True, objectName="plot_notice")
        self.notice.setStyleSheet(f"color: {ORANGE};")
        self.notice_button = QPushButton(objectName="anyway", visible=False)
        row.addWidget(self.notice, 1)
        row.addWidget(self.notice_button, 0, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft)
        outer.addWidget(self.notice_row)
        self.tabs = QTabBar(objectName="plot_tabs", drawBase=False, expanding=False)
        self.tabs.addTab(self.tr("Acceptance · speedup"))
        self.tabs.addTab(self.tr("By position · tokens/s"))
        self.tabs.currentChanged.connect(lambda _: self._arrange())
        outer.addWidget(self.tabs)
        self.grid = grid = QGridLayout()
        grid.setSpacing(6)
        outer.addLayout(grid, 1)
        self.plots: dict[str, pg.PlotWidget] = {}
        for i, (key, left, bottom) in enumerate((
            ("histogram", self.tr("share of rounds"), self.tr("drafts accepted per round")),
            ("speedup", self.tr("speedup ×"), self.tr("tokens in this message")),
            ("position", self.tr("acceptance rate"), self.tr("draft position")),
            ("throughput", self.tr("tokens / s"), self.tr("tokens in this message")),
        )):
            plot = pg.PlotWidget()
            plot.setMenuEnabled(False)
            plot.setMouseEnabled(False, False)
            plot.showGrid(x=False, y=True, alpha=0.25)
            plot.setLabel("left", left)
            plot.setLabel("bottom", bottom)
            plot.disableAutoRange()
            for name in ("left", "bottom"):
                plot.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            grid.addWidget(plot, i, 0)
            self.plots[key] = plot
        h = self.plots["histogram"]
        self.hist_message = pg.BarGraphItem(x=[], height=[], width=0.38, brush=BLUE, pen=None, name="message")
        # narrower, inside the message bar: the rounds of that bar that ended with a bonus token
        self.hist_bonus = pg.BarGraphItem(x=[], height=[], width=0.16, brush=GREEN, pen=None, name="bonus")
        self.hist_session = pg.BarGraphItem(
            x=[], height=[], width=0.38, brush=pg.mkBrush(colors.muted), pen=None, name="session"
        )
        for item in (self.hist_message, self.hist_bonus, self.hist_session):
            h.addItem(item)
        h.setYRange(0, SHARE_TOP, padding=0)
        for key in ("histogram", "position"):
            self.plots[key].getAxis("bottom").setTickSpacing(1, 1)
            self.plots[key].getAxis("left").setTicks(SHARE_TICKS)
        s = self.plots["speedup"]
        s.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=pg.mkPen(colors.muted, style=Qt.PenStyle.DotLine)))
        self.speedup_measured = s.plot([], [], pen=pg.mkPen(BLUE, width=2.5), symbol="o", symbolSize=4,
                                       symbolBrush=BLUE, symbolPen=None, name="measured")
        self.speedup_predicted = s.plot(
            [], [], pen=pg.mkPen(ORANGE, width=2, style=Qt.PenStyle.DashLine), name="this answer so far"
        )
        s.setToolTip(self.tr("Blue: the speedup measured so far in this answer, against target-only steps timed on "
                             "this machine. Dashed: \"this answer so far\", Leviathan et al.'s formula on this "
                             "answer's acceptance and draft cost. The status bar's \"auto's plan\" is the same "
                             "formula on the figures timed at load, before the answer."))
        p = self.plots["position"]
        self.pos_message = pg.BarGraphItem(x=[], height=[], width=0.6, brush=BLUE, pen=None, name="message")
        p.addItem(self.pos_message)
        self.pos_session = p.plot(
            [], [], pen=pg.mkPen(ORANGE, width=2), symbol="o", symbolSize=7, symbolBrush=ORANGE, name="session"
        )
        p.setYRange(0, SHARE_TOP, padding=0)
        t = self.plots["throughput"]
        self.tps_curve = t.plot([], [], pen=pg.mkPen(BLUE, width=2.5), name="speculative")
        self.tps_baseline = t.plot(
            [], [], pen=pg.mkPen(colors.muted, width=2, style=Qt.PenStyle.DashLine), name="target only"
        )
        self.timer = QTimer(self, interval=REFRESH_MS, timeout=self.refresh)
        self.timer.start()

    def set_colors(self, colors: Colors) -> None:
        """Re-tint for a theme switch; items stay, only their pens and brushes change."""
        self.colors = colors
        for plot in self.plots.values():
            plot.setBackground(colors.base)
            for name in ("left", "bottom"):
                plot.getAxis(name).setPen(colors.muted)
                plot.getAxis(name).setTextPen(colors.text)
        self.hist_session.setOpts(brush=pg.mkBrush(colors.muted))
        self.tps_baseline.setPen(pg.mkPen(colors.muted, width=2, style=Qt.PenStyle.DashLine))
        self._drawn = -1
        self._titles.clear()
        self.refresh()

    def set_presentation(self, on: bool) -> None:
        """Only the histogram and the speedup, stacked, with large axis text; off restores the grid."""
        self._title_size = self._presentation_title() if on else "10pt"
        self._presenting = on
        for key, plot in self.plots.items():
            for name in ("left", "bottom"):
                axis = plot.getAxis(name)
                if on:
                    offset = axis.style["tickTextOffset"][0 if name == "left" else 1]
                    self._axis_styles[key, name] = (axis.style["tickFont"], offset, dict(axis.labelStyle))
                    axis.setStyle(tickFont=QFont(self.font().family(), 18), tickTextOffset=8)
                    axis.setLabel(axis.labelText, **{"font-size": "18pt"})
                elif (key, name) in self._axis_styles:
                    font, offset, label = self._axis_styles.pop((key, name))
                    axis.setStyle(tickFont=font, tickTextOffset=offset)
                    axis.labelStyle = label
                    axis._updateLabel()
        font = QFont(self.font().family(), 14 if on else self.font().pointSize())  # read from the back too
        self.notice.setFont(font)
        self._arrange()
        self._titles.clear()
        self._drawn = -1
        self.refresh()

    def refresh(self) -> None:
        if self.stats.version == self._drawn:
            return
        self._drawn = self.stats.version
        st = self.stats
        gamma = self._gamma = st.max_gamma
        counts, bonus = st.message.histogram(gamma)
        total = sum(counts) or 1
        session_counts, _ = st.session.histogram(gamma)
        session_total = sum(session_counts) or 1
        xs = list(range(gamma + 1))
        if gamma != self._ranged_gamma:
            self._ranged_gamma = gamma
            self.plots["histogram"].setXRange(-0.6, gamma + 0.6, padding=0)
            self.plots["position"].setXRange(0.4, gamma + 0.6, padding=0)
        self.hist_message.setOpts(x=[x - 0.2 for x in xs], height=[c / total for c in counts])
        self.hist_bonus.setOpts(x=[x - 0.2 for x in xs], height=[b / total for b in bonus])
        self.hist_session.setOpts(x=[x + 0.2 for x in xs], height=[c / session_total for c in session_counts])
        self._title("histogram", self.tr("Accepted drafts per round ({0} rounds)").format(sum(counts)),
                    (BLUE, self.tr("message")), (GREEN, self.tr("bonus")), (self.colors.muted, self.tr("session")))

        sx, sy = st.speedup_series()
        self.speedup_measured.setData(sx, sy)
        predicted = st.predicted()
        self._range("speedup", "x", 0, _step_up(max(sx, default=0), 32))
        self._range("speedup", "y", 0, _step_up(max([*sy, predicted or 0, 1.0]) * 1.1, 0.5))
        if predicted is not None and sx:
            self.speedup_predicted.setData([0, max(sx)], [predicted, predicted])
        else:
            self.speedup_predicted.setData([], [])
        notice = st.notice
        drafted = any(r.drafted for r in st.message.rounds)
        if notice is None and drafted and len(sy) >= SLOW_AFTER_ROUNDS and sy[-1] < SLOW_BELOW:
            notice = QCoreApplication.translate(
                "PlotsPanel", "Measured slower than target-only so far ({0:.2f}×) on this machine.").format(sy[-1])
        elif notice is None and not drafted and len(st.message.rounds) >= SLOW_AFTER_ROUNDS:
            notice = QCoreApplication.translate(  # speculation that would not pay is not run: say so, once
                "PlotsPanel", "No draft proposed in this answer: the drafter proposes only where it predicts a "
                              "gain on this machine, and none did.")
        if notice != self._notice:
            self._notice = notice
            self.notice.setText(notice or "")
            self._sync_notice_row()
        self._title("speedup", self.tr("Speedup vs target-only"),
                    (BLUE, self.tr("measured") + (f" {sy[-1]:.2f}×" if sy else "")),
                    (ORANGE, self.tr("this answer so far") + (f" {predicted:.2f}×" if predicted is not None else "")))

        positions = list(range(1, gamma + 1))
        msg_rates = st.message.per_position(gamma)
        self.pos_message.setOpts(x=positions, height=[r or 0.0 for r in msg_rates])
        sess = [(i, r) for i, r in zip(positions, st.session.per_position(gamma), strict=True) if r is not None]
        self.pos_session.setData([i for i, _ in sess], [r for _, r in sess])
        alpha = st.session.alpha
        self._title("position", self.tr("Acceptance by position") + (f" · α = {alpha:.3f}" if alpha is not None else ""),
                    (BLUE, self.tr("message")), (ORANGE, self.tr("session")))

        tx, ty = st.throughput_series()
        self.tps_curve.setData(tx, ty)
        base_tps = 1 / st.baseline_step if st.baseline_step else 0.0
        self._range("throughput", "x", 0, _step_up(max(tx, default=0), 32))
        self._range("throughput", "y", 0, _step_up(max([*ty, base_tps, 1.0]) * 1.1, 5))
        if st.baseline_step and tx:
            self.tps_baseline.setData([0, max(tx)], [1 / st.baseline_step] * 2)
        else:
            self.tps_baseline.setData([], [])
        tps = st.tokens_per_second()
        self._title("throughput", self.tr("Tokens per second"),
                    (BLUE, self.tr("speculative") + (f" {tps:.1f}" if tps else "")),
                    (self.colors.muted, self.tr("target only") + (f" {1 / st.baseline_step:.1f}" if st.baseline_step else "")))

    def _sync_notice_row(self) -> None:
        self.notice_row.setVisible(bool(self._notice) or self.notice_button.isVisibleTo(self.notice_row))
        self._arrange()

    def set_offer(self, text: str | None) -> None:
        """The button beside the notice ("Show speculation anyway …"); None hides it."""
        self.notice_button.setText(text or "")
        self.notice_button.setVisible(bool(text))
        self._sync_notice_row()

    def _chrome_height(self) -> int:
        """Margins, and the notice row when it shows: what the plots do not get of the panel's height."""
        m = self.outer.contentsMargins()
        notice = self.notice_row.sizeHint().height() + self.outer.spacing() if self.notice_row.isVisibleTo(self) else 0
        return m.top() + m.bottom() + notice

    def _arrange(self) -> None:
        """Presenting: histogram and speedup, stacked. A side column: the four stacked where each gets
        MIN_PLOT_HEIGHT, else two behind each tab. Wider: both rows of two where each gets MIN_PLOT_HEIGHT,
        else the tabs' row."""
        columns = 1 if self._presenting or self.width() < GRID_FROM_PX else 2
        if columns != self._columns:
            self._columns = columns
            for i, plot in enumerate(self.plots.values()):
                self.grid.addWidget(plot, *((i, 0) if columns == 1 else (i // 2, i % 2)))
            self.notice_layout.setDirection(  # a narrow column: the notice has its whole width
                QBoxLayout.Direction.TopToBottom if columns == 1 else QBoxLayout.Direction.LeftToRight)
            self._titles.clear()  # the colour key moves to its own line, or back
            self._drawn = -1
            QTimer.singleShot(0, self, self.refresh)
        tab_bar = self.tabs.sizeHint().height() + self.outer.spacing()
        self.setMinimumHeight(self._chrome_height() + (0 if self._presenting else tab_bar) + MIN_PLOT_HEIGHT)
        room, gap = self.height() - self._chrome_height(), self.grid.spacing()
        keys = list(self.plots)
        if self._presenting:
            pages = [["histogram", "speedup"]]
        elif columns == 2:  # both rows, else a row behind each tab
            pages = [keys] if room >= 2 * MIN_PLOT_HEIGHT + gap else [keys[:2], keys[2:]]
        elif room >= 4 * MIN_PLOT_HEIGHT + 3 * gap:  # the side column: all four stacked, else two or one a tab
            pages = [keys]
        elif room - tab_bar >= 2 * MIN_PLOT_HEIGHT + gap:
            pages = [keys[:2], keys[2:]]
        else:  # the step-through shown below takes the height: one plot a tab
            pages = [[key] for key in keys]
        self._set_pages(pages)
        shown = pages[min(self.tabs.currentIndex(), len(pages) - 1)] if len(pages) > 1 else pages[0]
        self.tabs.setVisible(len(pages) > 1)
        for key, plot in self.plots.items():
            plot.setVisible(key in shown)

    def _set_pages(self, pages: list[list[str]]) -> None:
        """The tabs for these pages of plots: pairs keep their names, a single plot is named by its y axis."""
        if pages == self._pages:
            return
        names = {2: [self.tr("Acceptance · speedup"), self.tr("By position · tokens/s")]}
        if len(pages) in (2, 4):
            current = self.tabs.currentIndex()
            first = pages[0][0] if self._pages is None else self._pages[min(max(current, 0), len(self._pages) - 1)][0]
            self.tabs.blockSignals(True)
            while self.tabs.count():
                self.tabs.removeTab(0)
            for i, page in enumerate(pages):
                self.tabs.addTab(names[2][i] if len(pages) == 2 else self.plots[page[0]].getAxis("left").labelText)
            # the page holding the plot that was in front of its tab stays in front
            self.tabs.setCurrentIndex(next(i for i, page in enumerate(pages) if first in page))
            self.tabs.blockSignals(False)
        self._pages = pages

    def _presentation_title(self) -> str:
        return f"{PRESENTATION_TITLE_PT if self.width() >= WIDE_FROM_PX else NARROW_TITLE_PT}pt"

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._arrange()
        if self._presenting and self._title_size != self._presentation_title():
            self._title_size = self._presentation_title()
            self._titles.clear()
            self._drawn = -1
            self.refresh()

    def _range(self, key: str, axis: str, low: float, high: float) -> None:
        if self._ranges.get((key, axis)) != (low, high):
            self._ranges[key, axis] = (low, high)
            view = self.plots[key].getViewBox()
            (view.setXRange if axis == "x" else view.setYRange)(low, high, padding=0.02)

    def _title(self, key: str, text: str, *series: tuple[str, str]) -> None:
        """Title with an inline colour key: legends inside small plots would hide the data."""
        keys = " &nbsp;".join(f"<span style='color:{color}'>■</span> {label}" for color, label in series)
        # large type, or a plot in the side column: the key on its own line
        gap = "<br>" if self._title_size != "10pt" or self._columns == 1 else " &nbsp; "
        title = f"<b>{text}</b>{gap}{keys}"
        if self._titles.get(key) != title:
            self._titles[key] = title
            item = self.plots[key].plotItem
            item.setTitle(title, size=self._title_size)
            if gap == "<br>":  # pyqtgraph fixes the title row at 30 px: make room for two large lines
                height = int(item.titleLabel.item.boundingRect().height()) + 6
                item.titleLabel.setMaximumHeight(height)
                item.layout.setRowFixedHeight(0, height)

    def histogram_counts(self) -> list[int]:
        """The message histogram as drawn (bar heights are these counts over their sum)."""
        return self.stats.message.histogram(self.stats.max_gamma)[0]

    def export(self, folder: Path) -> list[Path]:
        """Every plot as PNG and SVG, and its data as CSV, into folder (plot_export.py)."""
        self.refresh()
        return export_plots(self.plots, self.stats, self._gamma, folder)


def _step_up(value: float, step: float) -> float:
    """The smallest multiple of step >= value (at least one step): ranges that rarely move."""
    return max(step, math.ceil(value / step) * step)
