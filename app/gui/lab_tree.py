"""The lab's tree tab: p at one node and three deterministic candidates (the draft's top 3, or the
user's), the accepted mass p(S) of the tree against a chain's Σ min(p, q), and simulated rounds,
decided by the engine's own one-hot rule (app/engine/toy_tree.py), converging to p."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.engine import toy, toy_tree
from app.history import palette

from .lab import MAX_VOCAB, NAMES, ROUNDS_PER_TICK, TICK_MS, Z95, DistributionEditor, _vector
from .step_panels import P_COLOR, Q_COLOR
from .theme import Colors

EXAMPLE_P = (0.35, 0.25, 0.2, 0.12, 0.08)
EXAMPLE_Q = (0.15, 0.45, 0.05, 0.3, 0.05)  # top 3 of q: B, D, A; p(S) 0.72 against Σ min(p, q) 0.62
MIN_VOCAB = 3
MAX_ROUNDS = 1_000_000


class TreeLab(QWidget):
    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(parent)
        self.setObjectName("lab_tree")
        self.colors = colors
        self.generator = torch.Generator().manual_seed(0)
        self.counts = toy_tree.TreeCounts(len(EXAMPLE_P))
        self.chain_counts = toy.ToyCounts(len(EXAMPLE_P))
        self.timer = QTimer(self, interval=TICK_MS, timeout=self.tick)
        root = QHBoxLayout(self)

        side = QVBoxLayout()
        edit = QGroupBox(self.tr("Target p and draft q at one node"))
        grid = QGridLayout(edit)
        self.vocab = QSpinBox(minimum=MIN_VOCAB, maximum=MAX_VOCAB, value=len(EXAMPLE_P))
        grid.addWidget(QLabel(self.tr("Tokens")), 0, 0)
        grid.addWidget(self.vocab, 0, 1, 1, 2)
        grid.addWidget(QLabel("p"), 1, 1, alignment=Qt.AlignmentFlag.AlignHCenter)
        grid.addWidget(QLabel("q"), 1, 2, alignment=Qt.AlignmentFlag.AlignHCenter)
        names = QVBoxLayout()
        self.name_labels = [QLabel(NAMES[i]) for i in range(MAX_VOCAB)]
        for label in self.name_labels:
            names.addWidget(label)
        self.p_edit = DistributionEditor(EXAMPLE_P)
        self.q_edit = DistributionEditor(EXAMPLE_Q)
        grid.addLayout(names, 2, 0)
        grid.addWidget(self.p_edit, 2, 1)
        grid.addWidget(self.q_edit, 2, 2)
        side.addWidget(edit)
        pick = QGroupBox(self.tr("Candidates, tested in this order"))
        row = QHBoxLayout(pick)
        self.top_q = QCheckBox(self.tr("Top 3 of q"), checked=True)
        row.addWidget(self.top_q)
        self.picks = [QComboBox() for _ in range(toy_tree.CANDIDATES)]
        for box in self.picks:
            row.addWidget(box)
        side.addWidget(pick)
        buttons = QHBoxLayout()
        self.example_button = QPushButton(self.tr("Example"))
        self.run_button = QPushButton(self.tr("Run"), checkable=True, objectName="primary")
        self.reset_button = QPushButton(self.tr("Reset counts"))
        for b in (self.example_button, self.run_button, self.reset_button):
            buttons.addWidget(b)
        side.addLayout(buttons)
        self.figures_label = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        self.figures_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        side.addWidget(self.figures_label)
        side.addStretch(1)
        holder = QWidget()
        holder.setLayout(side)
        holder.setFixedWidth(400)
        root.addWidget(holder)

        plots = QVBoxLayout()
        self.dist_plot = self._plot(self.tr(
            "<b>p, q and the final p′</b> &nbsp; <span style='color:{0}'>■</span> p &nbsp;"
            "<span style='color:{1}'>■</span> q &nbsp;<span style='color:{2}'>■</span> p′: p with the "
            "candidates zeroed, renormalised &nbsp; #1–#3: the candidates").format(P_COLOR, Q_COLOR, palette.CORRECTED))
        self.p_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=P_COLOR, pen=None)
        self.q_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=Q_COLOR, pen=None)
        self.r_bars = pg.BarGraphItem(x=[], height=[], width=0.25, brush=palette.CORRECTED, pen=None)
        for item in (self.p_bars, self.q_bars, self.r_bars):
            self.dist_plot.addItem(item)
        self.out_plot = self._plot("<b>" + self.tr("First token after simulated tree rounds (95% band)") + "</b>")
        self.out_bars = pg.BarGraphItem(x=[], height=[], width=0.5, brush=P_COLOR, pen=None)
        self.out_band = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), height=np.zeros(0), beam=0.15)
        self.p_marks = pg.PlotDataItem([], [], connect="pairs")  # the law the bars must reach: p
        for item in (self.out_bars, self.out_band, self.p_marks):
            self.out_plot.addItem(item)
        self.out_legend = QLabel(textFormat=Qt.TextFormat.RichText, wordWrap=True)
        plots.addWidget(self.dist_plot, 2)
        plots.addWidget(self.out_plot, 3)
        plots.addWidget(self.out_legend)
        root.addLayout(plots, 1)

        self.vocab.valueChanged.connect(self._vocab_changed)
        self.p_edit.on_change = self.q_edit.on_change = self._inputs_changed
        self.top_q.toggled.connect(self._inputs_changed)
        for box in self.picks:
            box.currentIndexChanged.connect(self._inputs_changed)
        self.example_button.clicked.connect(self.example)
        self.run_button.toggled.connect(self.set_running)
        self.reset_button.clicked.connect(self.reset_counts)
        self.set_colors(colors)
        self.example()

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
        for plot in (self.dist_plot, self.out_plot):
            plot.setBackground(colors.base)
            for name in ("left", "bottom"):
                plot.getAxis(name).setPen(colors.muted)
                plot.getAxis(name).setTextPen(colors.text)
        self.out_band.setData(pen=pg.mkPen(colors.text, width=1.5))
        self.p_marks.setPen(pg.mkPen(colors.text, width=3))

    # --- inputs ------------------------------------------------------------------------------
    def p(self) -> list[float]:
        return self.p_edit.values()

    def q(self) -> list[float]:
        return self.q_edit.values()

    def candidates(self) -> tuple[int, ...]:
        return tuple(box.currentIndex() for box in self.picks)

    def set_inputs(self, p, q, candidates=None) -> None:
        """p, q [V]; candidates: token indices in test order, or None for the top 3 of q."""
        for w in (self.vocab, self.top_q, *self.picks):
            w.blockSignals(True)
        self.vocab.setValue(len(p))
        self.top_q.setChecked(candidates is None)
        self._fill_picks(len(p))
        for box, x in zip(self.picks, candidates or (), strict=False):
            box.setCurrentIndex(x)
        for w in (self.vocab, self.top_q, *self.picks):
            w.blockSignals(False)
        self.p_edit.set_values(p)
        self.q_edit.set_values(q)
        self._inputs_changed()

    def example(self) -> None:
        self.set_inputs(EXAMPLE_P, EXAMPLE_Q)

    def _fill_picks(self, size: int) -> None:
        for i, box in enumerate(self.picks):
            old = box.currentIndex()
            box.blockSignals(True)
            box.clear()
            box.addItems(list(NAMES[:size]))
            box.setCurrentIndex(old if 0 <= old < size else min(i, size - 1))
            box.blockSignals(False)

    def _vocab_changed(self, size: int) -> None:
        self.p_edit.resize_vocab(size)
        self.q_edit.resize_vocab(size)
        self._fill_picks(size)
        self._inputs_changed()

    def _inputs_changed(self) -> None:
        for i, label in enumerate(self.name_labels):
            label.setVisible(i < self.vocab.value())
        if self.top_q.isChecked():
            for box, x in zip(self.picks, toy_tree.top_candidates(self.q()), strict=True):
                box.blockSignals(True)
                box.setCurrentIndex(x)
                box.blockSignals(False)
        for box in self.picks:
            box.setEnabled(not self.top_q.isChecked())
        self.reset_counts()

    def reset_counts(self) -> None:
        self.counts = toy_tree.TreeCounts(len(self.p()))
        self.chain_counts = toy.ToyCounts(len(self.p()))
        self._refresh()

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
        """Add `rounds` tree rounds (the engine's tree rule) and as many one-token chain rounds (its
        decide), and redraw."""
        p = torch.tensor(self.p(), dtype=torch.float32)
        q = torch.tensor(self.q(), dtype=torch.float32)
        toy_tree.simulate(p, self.candidates(), rounds, self.generator, self.counts)
        toy.simulate(p, q, 1, rounds, self.generator, self.chain_counts)
        self._refresh()

    def empirical(self) -> tuple[list[float], list[float]]:
        """(first-token shares of the tree rounds, their 95% half-widths)."""
        n = self.counts.rounds
        shares = [c / n if n else 0.0 for c in self.counts.first]
        return shares, [Z95 * math.sqrt(s * (1 - s) / n) if n else 0.0 for s in shares]

    def figures(self) -> toy_tree.TreeFigures:
        return toy_tree.figures(self.p(), self.q(), self.candidates())

    def _refresh(self) -> None:
        p, q, f, cands = self.p(), self.q(), self.figures(), self.candidates()
        xs = list(range(len(p)))
        order = {}
        for rank, x in enumerate(cands):
            order.setdefault(x, []).append(f"#{rank + 1}")
        ticks = [[(i, NAMES[i] + (" " + " ".join(order[i]) if i in order else "")) for i in xs]]
        for plot in (self.dist_plot, self.out_plot):
            plot.setXRange(-0.6, len(p) - 0.4, padding=0)
            plot.getAxis("bottom").setTicks(ticks)
        self.p_bars.setOpts(x=[i - 0.27 for i in xs], height=p)
        self.q_bars.setOpts(x=xs, height=q)
        self.r_bars.setOpts(x=[i + 0.27 for i in xs], height=list(f.residual))
        shares, half = self.empirical()
        self.out_bars.setOpts(x=xs, height=shares)
        self.out_band.setData(x=np.array(xs, dtype=float), y=np.array(shares), height=2 * np.array(half))
        self.p_marks.setData([x + d for x in xs for d in (-0.3, 0.3)], [y for y in p for _ in (0, 1)])
        n = self.counts.rounds
        mass_hat = f"{self.counts.any_accepted / n:.3f}" if n else "–"
        alpha_hat = f"{self.chain_counts.first_accepted / n:.3f}" if n else "–"
        names = "{" + ", ".join(NAMES[x] for x in cands) + "}"
        lines = [
            self.tr("<b>tree</b>: p(S) = Σ p over the candidates S = {0} = <b>{1:.3f}</b> &nbsp; (simulated {2})").format(
                names, f.tree_mass, mass_hat),
            self.tr("<b>chain</b>, one token sampled from q: Σ min(p, q) = <b>{0:.3f}</b> &nbsp; (simulated {1})").format(
                f.chain_alpha, alpha_hat),
        ]
        for rank, x in enumerate(cands):
            got = f"{self.counts.accepted[rank] / n:.3f}" if n else "–"
            lines.append(self.tr("#{0} {1}: reached {2:.3f}, accepted when u &lt; p′ = {3:.3f}, so P = p({1}) = "
                                 "<b>{4:.3f}</b> &nbsp; (simulated {5})").format(
                rank + 1, NAMES[x], f.reach[rank], f.accept_prob[rank], f.accepted[rank], got))
        lines += [
            self.tr("all rejected ({0:.3f}): the token is drawn from p′ = {1}").format(1 - f.tree_mass, _vector(f.residual)),
            self.tr("<b>E[tokens per round]</b>: tree 1 + p(S) = <b>{0:.3f}</b>, chain 1 + Σ min(p, q) = "
                    "<b>{1:.3f}</b>").format(1 + f.tree_mass, 1 + f.chain_alpha),
            self.tr("Simulated rounds: <b>{0}</b>").format(n),
        ]
        self.figures_label.setText("<br>".join(lines))
        self.out_legend.setText(self.tr(
            "<span style='color:{0}'>■</span> first token of each round, decided by the engine's own tree rule "
            "&nbsp; — p (the target) &nbsp; I 95% band · the tree wins when its candidates hold more of p than "
            "q shares with p; a draft close to p, sampled, wins as a chain").format(P_COLOR))

    def stop(self) -> None:
        self.run_button.setChecked(False)
