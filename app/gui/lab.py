"""View → Lab: the seeds' worked example, live. Edit p and q on a 2–6 token vocabulary, see α, the
residual, the expected tokens per round and the speedup formula, and watch simulated rounds (decided
by the engine's own `decide`) converge to p while the wrong rule converges to its biased law. Its
second tab is the token-tree example (lab_tree.py)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.engine.toy import ToyCounts, figures, simulate
from app.history import palette

from .step_panels import P_COLOR, Q_COLOR
from .theme import Colors

MAX_VOCAB = 6
NAMES = "ABCDEF"
PAPER_P, PAPER_Q = (0.6, 0.4), (0.8, 0.2)
ROUNDS_PER_TICK = 400
TICK_MS = 50
MAX_ROUNDS = 1_000_000
Z95 = 1.96
WRONG_COLOR = "#CC79A7"  # Okabe-Ito reddish purple: the biased rule


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
        self.size = len(values)
        self.set_values(values)
        self.on_change = lambda: None

    def set_values(self, values) -> None:
        self.size = len(values)
        for i, spin in enumerate(self.spins):
            spin.blockSignals(True)
            spin.setValue(values[i] if i < self.size else 0.0)
            spin.setVisible(i < self.size)
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
        others = [k for k in range(self.size) if k != i]
        rest = sum(self._values[k] for k in others)
        new = list(self._values)
        new[i] = value
        for k in others:  # the others share 1 - value in their current proportions
            new[k] = (1 - value) * (self._values[k] / rest if rest > 0 else 1 / len(others))
        self.set_values(new)
        self.on_change()


class LabWindow(QWidget):
    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("lab")
        self.setWindowTitle(self.tr("SpecLens Lab — why speculative sampling is exact"))
        self.colors = colors
        self.generator = torch.Generator().manual_seed(0)
        self.counts = ToyCounts(2)
        self.timer = QTimer(self, interval=TICK_MS, timeout=self.tick)
        from .lab_tree import TreeLab  # it imports this module's editor

        chain = QWidget()
        root = QHBoxLayout(chain)
        self.tree_lab = TreeLab(colors)
        self.tabs = QTabWidget()
        self.tabs.addTab(chain, self.tr("Chain: one draft, sampled from q"))
        self.tabs.addTab(self.tree_lab, self.tr("Tree: three candidates at one node"))
        QVBoxLayout(self).addWidget(self.tabs)

        side = QVBoxLayout()
        edit = QGroupBox(self.tr("Target p and draft q"))
        grid = QGridLayout(edit)
        self.vocab = QSpinBox(minimum=2, maximum=MAX_VOCAB, value=2)
        grid.addWidget(QLabel(self.tr("Tokens")), 0, 0)
        grid.addWidget(self.vocab, 0, 1, 1, 2)
        grid.addWidget(QLabel("p"), 1, 1, alignment=Qt.AlignmentFlag.AlignHCenter)
        grid.addWidget(QLabel("q"), 1, 2, alignment=Qt.AlignmentFlag.AlignHCenter)
        names = QVBoxLayout()
        self.name_labels = [QLabel(NAMES[i]) for i in range(MAX_VOCAB)]
        for label in self.name_labels:
            names.addWidget(label)
        self.p_edit = DistributionEditor(PAPER_P)
        self.q_edit = DistributionEditor(PAPER_Q)
        grid.addLayout(names, 2, 0)
        grid.addWidget(self.p_edit, 2, 1)
        grid.addWidget(self.q_edit, 2, 2)
        side.addWidget(edit)
        params = QGroupBox(self.tr("Rounds and cost"))
        form = QFormLayout(params)
        self.gamma = QSpinBox(minimum=1, maximum=16, value=4)
        self.cost = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.05, decimals=2, value=0.1)
        form.addRow(self.tr("γ (drafts per round)"), self.gamma)
        form.addRow(self.tr("c (draft step / target step)"), self.cost)
        side.addWidget(params)
        buttons = QHBoxLayout()
        self.paper_button = QPushButton(self.tr("Paper example"))
        self.run_button = QPushButton(self.tr("Run"), checkable=True, objectName="primary")
        self.reset_button = QPushButton(self.tr("Reset counts"))
        for b in (self.paper_button, self.run_button, self.reset_button):
            buttons.addWidget(b)
        side.addLayout(buttons)
        self.figures_label = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        self.figures_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        side.addWidget(self.figures_label)
        side.addStretch(1)
        holder = QWidget()
        holder.setLayout(side)
        holder.setFixedWidth(360)
        root.addWidget(holder)

        plots = QVBoxLayout()
        self.dist_plot = self._plot(self.tr(
            "<b>p, q and the residual</b> &nbsp; <span style='color:{0}'>■</span> p (target) &nbsp;"
            "<span style='color:{1}'>■</span> q (draft) &nbsp;<span style='color:{2}'>■</span> "
            "norm(max(p − q, 0))").format(P_COLOR, Q_COLOR, palette.CORRECTED))
        self.p_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=P_COLOR, pen=None)
        self.q_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=Q_COLOR, pen=None)
        self.r_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=palette.CORRECTED, pen=None)
        for item in (self.p_bars, self.q_bars, self.r_bars):
            self.dist_plot.addItem(item)
        self.out_plot = self._plot("<b>" + self.tr("Output after simulated rounds (95% band)") + "</b>")
        self.correct_bars = pg.BarGraphItem(x=[], height=[], width=0.35, brush=P_COLOR, pen=None)
        self.wrong_bars = pg.BarGraphItem(x=[], height=[], width=0.35, brush=WRONG_COLOR, pen=None)
        self.correct_band = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), height=np.zeros(0), beam=0.12, pen=pg.mkPen(colors.text, width=1.5))
        self.wrong_band = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), height=np.zeros(0), beam=0.12, pen=pg.mkPen(colors.text, width=1.5))
        # The laws the bars must reach: a short level line across each bar.
        self.p_marks = pg.PlotDataItem([], [], connect="pairs", pen=pg.mkPen(colors.text, width=3))
        self.wrong_marks = pg.PlotDataItem([], [], connect="pairs",
                                           pen=pg.mkPen(colors.text, width=3, style=Qt.PenStyle.DashLine))
        for item in (self.correct_bars, self.wrong_bars, self.correct_band, self.wrong_band, self.p_marks,
                     self.wrong_marks):
            self.out_plot.addItem(item)
        self.out_legend = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        plots.addWidget(self.dist_plot, 2)
        plots.addWidget(self.out_plot, 3)
        plots.addWidget(self.out_legend)
        root.addLayout(plots, 1)

        self.vocab.valueChanged.connect(self._vocab_changed)
        self.p_edit.on_change = self.q_edit.on_change = self._inputs_changed
        self.gamma.valueChanged.connect(self._inputs_changed)
        self.cost.valueChanged.connect(self._refresh_figures)
        self.paper_button.clicked.connect(self.paper_example)
        self.run_button.toggled.connect(self.set_running)
        self.reset_button.clicked.connect(self.reset_counts)
        self.set_colors(colors)
        self.paper_example()

    def _plot(self, title: str) -> pg.PlotWidget:
        plot = pg.PlotWidget()
        plot.setMenuEnabled(False)
        plot.setMouseEnabled(False, False)
        plot.hideButtons()
        plot.showGrid(y=True, alpha=0.25)
        plot.setYRange(0, 1.05, padding=0)
        plot.setTitle(title, size="10pt")
        return plot

    def set_colors(self, colors: Colors) -> None:
        self.colors = colors
        self.tree_lab.set_colors(colors)
        for plot in (self.dist_plot, self.out_plot):
            plot.setBackground(colors.base)
            for name in ("left", "bottom"):
                plot.getAxis(name).setPen(colors.muted)
                plot.getAxis(name).setTextPen(colors.text)
        for band in (self.correct_band, self.wrong_band):
            band.setData(pen=pg.mkPen(colors.text, width=1.5))
        self.p_marks.setPen(pg.mkPen(colors.text, width=3))
        self.wrong_marks.setPen(pg.mkPen(colors.text, width=3, style=Qt.PenStyle.DashLine))

    # --- inputs ------------------------------------------------------------------------------
    def p(self) -> list[float]:
        return self.p_edit.values()

    def q(self) -> list[float]:
        return self.q_edit.values()

    def set_distributions(self, p, q) -> None:
        self.vocab.blockSignals(True)
        self.vocab.setValue(len(p))
        self.vocab.blockSignals(False)
        self.p_edit.set_values(p)
        self.q_edit.set_values(q)
        self._inputs_changed()

    def paper_example(self) -> None:
        """The seeds' example 1: p = (0.6, 0.4), q = (0.8, 0.2)."""
        self.set_distributions(PAPER_P, PAPER_Q)

    def _vocab_changed(self, size: int) -> None:
        self.p_edit.resize_vocab(size)
        self.q_edit.resize_vocab(size)
        self._inputs_changed()

    def _inputs_changed(self) -> None:
        for i, label in enumerate(self.name_labels):
            label.setVisible(i < self.vocab.value())
        self.reset_counts()

    def reset_counts(self) -> None:
        self.counts = ToyCounts(len(self.p()))
        self._refresh_figures()

    # --- simulation ---------------------------------------------------------------------------
    def set_running(self, running: bool) -> None:
        self.run_button.setText(self.tr("Pause") if running else self.tr("Run"))
        if running:
            self.timer.start()
        else:
            self.timer.stop()

    def tick(self) -> None:
        self.simulate(ROUNDS_PER_TICK)
        if self.counts.rounds >= MAX_ROUNDS:
            self.run_button.setChecked(False)

    def simulate(self, rounds: int) -> None:
        """Add `rounds` simulated rounds (the engine's decide) and redraw."""
        p = torch.tensor(self.p(), dtype=torch.float32)
        q = torch.tensor(self.q(), dtype=torch.float32)
        simulate(p, q, self.gamma.value(), rounds, self.generator, self.counts)
        self._refresh_figures()

    def empirical(self) -> tuple[list[float], list[float], list[float], list[float]]:
        """(correct shares, their 95% half-widths, wrong shares, their half-widths)."""
        n = self.counts.rounds
        if n == 0:
            zeros = [0.0] * self.counts.vocab
            return zeros, zeros, zeros, zeros
        out = []
        for counts in (self.counts.correct, self.counts.wrong):
            shares = [c / n for c in counts]
            out += [shares, [Z95 * math.sqrt(s * (1 - s) / n) for s in shares]]
        return tuple(out)

    def figures(self):
        return figures(self.p(), self.q(), self.gamma.value(), self.cost.value())

    def _refresh_figures(self) -> None:
        p, q, f = self.p(), self.q(), self.figures()
        v = len(p)
        xs = list(range(v))
        ticks = [[(i, NAMES[i]) for i in xs]]
        for plot in (self.dist_plot, self.out_plot):
            plot.setXRange(-0.6, v - 0.4, padding=0)
            plot.getAxis("bottom").setTicks(ticks)
        self.p_bars.setOpts(x=[i - 0.27 for i in xs], height=p)
        self.q_bars.setOpts(x=xs, height=q)
        self.r_bars.setOpts(x=[i + 0.27 for i in xs], height=list(f.residual))
        correct, c_half, wrong, w_half = self.empirical()
        left, right = [i - 0.19 for i in xs], [i + 0.19 for i in xs]
        self.correct_bars.setOpts(x=left, height=correct)
        self.wrong_bars.setOpts(x=right, height=wrong)
        for band, x, y, half in ((self.correct_band, left, correct, c_half), (self.wrong_band, right, wrong, w_half)):
            band.setData(x=np.array(x), y=np.array(y), height=2 * np.array(half))
        for marks, centres, law in ((self.p_marks, left, f.correct), (self.wrong_marks, right, f.wrong)):
            marks.setData([x + d for x in centres for d in (-0.2, 0.2)], [y for y in law for _ in (0, 1)])
        fmt = _vector
        n = self.counts.rounds
        alpha_hat = f"{self.counts.first_accepted / n:.3f}" if n else "–"
        tokens_hat = f"{self.counts.emitted / n:.3f}" if n else "–"
        gamma, c = self.gamma.value(), self.cost.value()
        self.figures_label.setText("<br>".join([
            self.tr("<b>α</b> = Σ min(p, q) = <b>{0:.3f}</b> &nbsp; (simulated {1})").format(f.alpha, alpha_hat),
            self.tr("<b>residual</b> norm(max(p − q, 0)) = {0}").format(fmt(f.residual)),
            self.tr("<b>output, correct rule</b>: min(p, q) + (1 − α)·residual = <b>{0}</b>").format(fmt(f.correct)),
            self.tr("<b>output, wrong rule</b> (resample from p): min(p, q) + (1 − α)·p = <b>{0}</b>").format(
                fmt(f.wrong)),
            self.tr("<b>E[tokens per round]</b> = (1 − α<sup>γ+1</sup>) / (1 − α) = <b>{0:.3f}</b> &nbsp; "
                    "(simulated {1})").format(f.expected_tokens, tokens_hat),
            self.tr("<b>speedup</b> ≈ (1 − α<sup>γ+1</sup>) / ((1 − α)(1 + γc)) = {0:.3f} / (1 + {1}·{2:.2f}) "
                    "= <b>{3:.2f}×</b>").format(f.expected_tokens, gamma, c, f.speedup),
            self.tr("Simulated rounds: <b>{0}</b>").format(n),
        ]))
        self.out_legend.setText(self.tr(
            "<span style='color:{0}'>■</span> correct rule (residual) &nbsp; "
            "<span style='color:{1}'>■</span> wrong rule (resample from p) &nbsp; "
            "— p (the target) &nbsp; - - the wrong rule's law &nbsp; I 95% band · first token of each round, decided by "
            "the engine's own acceptance code").format(P_COLOR, WRONG_COLOR))

    def closeEvent(self, event) -> None:
        self.run_button.setChecked(False)
        self.tree_lab.stop()
        super().closeEvent(event)


def _vector(values) -> str:
    return "(" + ", ".join(f"{v:.3f}".rstrip("0").rstrip(".") if v else "0" for v in values) + ")"
