"""What both tabs of the lab share (lab.py: the chain, lab_tree.py: the tree), as one widget: p and q edited
over a 2–6 token vocabulary, the tab's own controls, Example / Run / Reset counts, the figures, and two
plots over the same tokens (p, q and a third law; the simulated output) with their legend, and the timer
that simulates rounds while Run is down. A tab adds its controls and plot items and decides the rounds."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.history import palette

from .step_panels import P_COLOR, Q_COLOR
from .theme import Colors

MAX_VOCAB = 6
NAMES = "ABCDEF"
ROUNDS_PER_TICK = 400
TICK_MS = 50
MAX_ROUNDS = 1_000_000
Z95 = 1.96



class DistributionEditor(QWidget):
    """A column of spin boxes that always sums to 1: changing one rescales the others."""

    def __init__(self, values, parent=None) -> None:
        super().__init__(parent)
        self.spins = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for _ in range(MAX_VOCAB):
            spin = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=3)
            spin.valueChanged.connect(lambda value, s=spin: self._changed(s, value))
            layout.addWidget(spin)
            self.spins.append(spin)
        self.tokens = len(values)
        self.set_values(values)
        self.on_change = lambda: None

    def set_values(self, values) -> None:
        self.tokens = len(values)
        for i, spin in enumerate(self.spins):
            spin.blockSignals(True)
            spin.setValue(values[i] if i < self.tokens else 0.0)
            spin.setVisible(i < self.tokens)
            spin.blockSignals(False)
        self._values = [float(v) for v in values]

    def values(self) -> list[float]:
        return list(self._values)

    def resize_vocab(self, size: int) -> None:
        old = self._values[:size] + [0.0] * max(0, size - len(self._values))
        total = sum(old)
        self.set_values([v / total for v in old] if total > 0 else [1.0 / size] * size)

    def _changed(self, spin, value: float) -> None:
        i = self.spins.index(spin)
        others = [k for k in range(self.tokens) if k != i]
        rest = sum(self._values[k] for k in others)
        new = list(self._values)
        new[i] = value
        for k in others:  # the others share 1 - value in their current proportions
            new[k] = (1 - value) * (self._values[k] / rest if rest > 0 else 1 / len(others))
        self.set_values(new)
        self.on_change()


class LabTab(QWidget):
    """One tab's frame. A tab names its parts (set_titles), adds its controls (add_controls) and its items to
    `out_plot`, and provides simulate(rounds), reset_counts() and _inputs_changed(); `counts.rounds` stops
    Run at MAX_ROUNDS."""

    counts: Any  # the tab's running totals (app.engine.toy.ToyCounts, toy_tree.TreeCounts)

    def simulate(self, rounds: int) -> None:
        raise NotImplementedError

    def reset_counts(self) -> None:
        raise NotImplementedError

    def _inputs_changed(self) -> None:
        raise NotImplementedError

    def __init__(self, colors: Colors, p, q, *, min_vocab: int, side_width: int, parent=None) -> None:
        super().__init__(parent)
        self.colors = colors
        self.timer = QTimer(self, interval=TICK_MS, timeout=self.tick)
        root = QHBoxLayout(self)
        self.side = QVBoxLayout()
        self.editor = edit = QGroupBox()
        grid = QGridLayout(edit)
        self.vocab = QSpinBox(minimum=min_vocab, maximum=MAX_VOCAB, value=len(p))
        grid.addWidget(QLabel(QCoreApplication.translate("LabTab", "Tokens")), 0, 0)
        grid.addWidget(self.vocab, 0, 1, 1, 2)
        grid.addWidget(QLabel("p"), 1, 1, alignment=Qt.AlignmentFlag.AlignHCenter)
        grid.addWidget(QLabel("q"), 1, 2, alignment=Qt.AlignmentFlag.AlignHCenter)
        names = QVBoxLayout()
        self.name_labels = [QLabel(NAMES[i]) for i in range(MAX_VOCAB)]
        for label in self.name_labels:
            names.addWidget(label)
        self.p_edit = DistributionEditor(p)
        self.q_edit = DistributionEditor(q)
        grid.addLayout(names, 2, 0)
        grid.addWidget(self.p_edit, 2, 1)
        grid.addWidget(self.q_edit, 2, 2)
        self.side.addWidget(edit)
        buttons = QHBoxLayout()
        self.example_button = QPushButton()
        self.run_button = QPushButton(QCoreApplication.translate("LabTab", "Run"), checkable=True, objectName="primary")
        self.reset_button = QPushButton(QCoreApplication.translate("LabTab", "Reset counts"))
        for b in (self.example_button, self.run_button, self.reset_button):
            buttons.addWidget(b)
        self.side.addLayout(buttons)
        self.figures_label = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        self.figures_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.side.addWidget(self.figures_label)
        self.side.addStretch(1)
        holder = QWidget()
        holder.setLayout(self.side)
        holder.setFixedWidth(side_width)
        root.addWidget(holder)

        plots = QVBoxLayout()
        self.dist_plot = self._plot()
        self.p_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=P_COLOR, pen=None)
        self.q_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=Q_COLOR, pen=None)
        self.r_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=palette.CORRECTED, pen=None)
        for item in (self.p_bars, self.q_bars, self.r_bars):
            self.dist_plot.addItem(item)
        self.out_plot = self._plot()
        self.out_legend = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        plots.addWidget(self.dist_plot, 2)
        plots.addWidget(self.out_plot, 3)
        plots.addWidget(self.out_legend)
        root.addLayout(plots, 1)

        self.vocab.valueChanged.connect(self._vocab_changed)
        self.p_edit.on_change = self.q_edit.on_change = self._inputs_changed
        self.run_button.toggled.connect(self.set_running)
        self.reset_button.clicked.connect(self.reset_counts)

    def set_titles(self, editor: str, example: str, dist: str, out: str) -> None:
        """The p and q editor's title, the Example button's, and the two plots' titles."""
        self.editor.setTitle(editor)
        self.example_button.setText(example)
        self.dist_plot.setTitle(dist, size="10pt")
        self.out_plot.setTitle(out, size="10pt")

    def add_controls(self, group: QWidget) -> None:
        """The tab's own controls, under the p and q editor."""
        self.side.insertWidget(1, group)

    @staticmethod
    def _plot() -> pg.PlotWidget:
        plot = pg.PlotWidget()
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(False, False)
        plot.hideButtons()
        plot.showGrid(y=True, alpha=0.25)
        plot.setYRange(0, 1.05, padding=0)
        return plot

    def set_colors(self, colors: Colors) -> None:
        self.colors = colors
        for plot in (self.dist_plot, self.out_plot):
            plot.setBackground(colors.base)
            for name in ("left", "bottom"):
                plot.getAxis(name).setPen(colors.muted)
                plot.getAxis(name).setTextPen(colors.text)

    # --- inputs ------------------------------------------------------------------------------
    def p(self) -> list[float]:
        return self.p_edit.values()

    def q(self) -> list[float]:
        return self.q_edit.values()

    def _vocab_changed(self, size: int) -> None:
        self.p_edit.resize_vocab(size)
        self.q_edit.resize_vocab(size)
        self._inputs_changed()

    def show_names(self) -> None:
        for i, label in enumerate(self.name_labels):
            label.setVisible(i < self.vocab.value())

    def show_laws(self, p, q, residual, ticks) -> None:
        """The first plot's bars (p, q and the third law, side by side) and both plots' token axis."""
        xs = list(range(len(p)))
        for plot in (self.dist_plot, self.out_plot):
            plot.setXRange(-0.6, len(p) - 0.4, padding=0)
            plot.getAxis("bottom").setTicks(ticks)
        self.p_bars.setOpts(x=[i - 0.27 for i in xs], height=p)
        self.q_bars.setOpts(x=xs, height=q)
        self.r_bars.setOpts(x=[i + 0.27 for i in xs], height=list(residual))

    # --- simulation ---------------------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        self.run_button.setText(QCoreApplication.translate("LabTab", "Pause") if running else QCoreApplication.translate("LabTab", "Run"))
        if running:
            self.timer.start()
        else:
            self.timer.stop()

    def tick(self) -> None:
        self.simulate(ROUNDS_PER_TICK)
        if self.counts.rounds >= MAX_ROUNDS:
            self.run_button.setChecked(False)

    def stop(self) -> None:
        self.run_button.setChecked(False)


def vector_text(values) -> str:
    return "(" + ", ".join(f"{v:.3f}".rstrip("0").rstrip(".") if v else "0" for v in values) + ")"
