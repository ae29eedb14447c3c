"""View → Lab: the seeds' worked example, live. Edit p and q on a 2–6 token vocabulary, see α, the
residual, the expected tokens per round and the speedup formula, and watch simulated rounds (decided
by the engine's own `decide`) converge to p while the wrong rule converges to its biased law. Its
second tab is the token-tree example (lab_tree.py); both are a LabTab (lab_panel.py)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.engine.toy import ToyCounts, figures, simulate
from app.history import palette

from .lab_panel import NAMES, Z95, LabTab, vector_text
from .lab_tree import TreeLab
from .step_panels import P_COLOR, Q_COLOR
from .theme import Colors

PAPER_P, PAPER_Q = (0.6, 0.4), (0.8, 0.2)
WRONG_COLOR = "#CC79A7"  # Okabe-Ito reddish purple: the biased rule


class LabWindow(QWidget):
    """The lab's window: the chain tab and the tree tab."""

    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent, Qt.WindowType.Window)
        self.setObjectName("lab")
        self.setWindowTitle(self.tr("SpecLens Lab — why speculative sampling is exact"))
        self.chain = ChainLab(colors)
        self.tree_lab = TreeLab(colors)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.chain, self.tr("Chain: one draft, sampled from q"))
        self.tabs.addTab(self.tree_lab, self.tr("Tree: three candidates at one node"))
        QVBoxLayout(self).addWidget(self.tabs)

    def set_colors(self, colors: Colors) -> None:
        self.chain.set_colors(colors)
        self.tree_lab.set_colors(colors)

    def closeEvent(self, event) -> None:
        self.chain.stop()
        self.tree_lab.stop()
        super().closeEvent(event)


class ChainLab(LabTab):
    """The chain tab: one draft token sampled from q, accepted with min(1, p/q), else a token from the
    residual; γ and c give the expected tokens per round and the speedup."""

    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(colors, PAPER_P, PAPER_Q, min_vocab=2, side_width=360, parent=parent)
        self.set_titles(
            self.tr("Target p and draft q"), self.tr("Paper example"),
            self.tr("<b>p, q and the residual</b> &nbsp; <span style='color:{0}'>■</span> p (target) &nbsp;"
                    "<span style='color:{1}'>■</span> q (draft) &nbsp;<span style='color:{2}'>■</span> "
                    "norm(max(p − q, 0))").format(P_COLOR, Q_COLOR, palette.CORRECTED),
            "<b>" + self.tr("Output after simulated rounds (95% band)") + "</b>")
        self.generator = torch.Generator().manual_seed(0)
        self.counts = ToyCounts(2)
        params = QGroupBox(self.tr("Rounds and cost"))
        form = QFormLayout(params)
        self.gamma = QSpinBox(minimum=1, maximum=16, value=4)
        self.cost = QDoubleSpinBox(minimum=0.0, maximum=2.0, singleStep=0.05, decimals=2, value=0.1)
        form.addRow(self.tr("γ (drafts per round)"), self.gamma)
        form.addRow(self.tr("c (draft step / target step)"), self.cost)
        self.add_controls(params)
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
        self.gamma.valueChanged.connect(self._inputs_changed)
        self.cost.valueChanged.connect(self._refresh_figures)
        self.example_button.clicked.connect(self.paper_example)
        self.set_colors(colors)
        self.paper_example()

    def set_colors(self, colors: Colors) -> None:
        super().set_colors(colors)
        for band in (self.correct_band, self.wrong_band):
            band.setData(pen=pg.mkPen(colors.text, width=1.5))
        self.p_marks.setPen(pg.mkPen(colors.text, width=3))
        self.wrong_marks.setPen(pg.mkPen(colors.text, width=3, style=Qt.PenStyle.DashLine))

    # --- inputs ------------------------------------------------------------------------------
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

    def _inputs_changed(self) -> None:
        self.show_names()
        self.reset_counts()

    def reset_counts(self) -> None:
        self.counts = ToyCounts(len(self.p()))
        self._refresh_figures()

    # --- simulation ---------------------------------------------------------------------------
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
        correct, wrong = ([c / n for c in counts] for counts in (self.counts.correct, self.counts.wrong))
        return correct, _band(correct, n), wrong, _band(wrong, n)

    def figures(self):
        return figures(self.p(), self.q(), self.gamma.value(), self.cost.value())

    def _refresh_figures(self) -> None:
        p, q, f = self.p(), self.q(), self.figures()
        xs = list(range(len(p)))
        self.show_laws(p, q, f.residual, [[(i, NAMES[i]) for i in xs]])
        correct, c_half, wrong, w_half = self.empirical()
        left, right = [i - 0.19 for i in xs], [i + 0.19 for i in xs]
        self.correct_bars.setOpts(x=left, height=correct)
        self.wrong_bars.setOpts(x=right, height=wrong)
        for band, x, y, half in ((self.correct_band, left, correct, c_half), (self.wrong_band, right, wrong, w_half)):
            band.setData(x=np.array(x), y=np.array(y), height=2 * np.array(half))
        for marks, centres, law in ((self.p_marks, left, f.correct), (self.wrong_marks, right, f.wrong)):
            marks.setData([x + d for x in centres for d in (-0.2, 0.2)], [y for y in law for _ in (0, 1)])
        fmt = vector_text
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


def _band(shares: list[float], rounds: int) -> list[float]:
    """The 95% half-width of each share of `rounds` rounds (normal approximation)."""
    return [Z95 * math.sqrt(s * (1 - s) / rounds) for s in shares]
