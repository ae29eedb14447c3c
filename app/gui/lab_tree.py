"""The lab's tree tab: p at one node and three deterministic candidates (the draft's top 3, or the
user's), the accepted mass p(S) of the tree against a chain's Σ min(p, q), and simulated rounds,
decided by the engine's own one-hot rule (app/engine/toy_tree.py), converging to p."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
import torch
from PySide6.QtWidgets import QCheckBox, QComboBox, QGroupBox, QHBoxLayout

from app.engine import toy, toy_tree
from app.history import palette

from .lab_panel import NAMES, Z95, LabTab, vector_text
from .step_panels import P_COLOR, Q_COLOR
from .theme import Colors

EXAMPLE_P = (0.35, 0.25, 0.2, 0.12, 0.08)
EXAMPLE_Q = (0.15, 0.45, 0.05, 0.3, 0.05)  # top 3 of q: B, D, A; p(S) 0.72 against Σ min(p, q) 0.62
MIN_VOCAB = 3


class TreeLab(LabTab):
    def __init__(self, colors: Colors, parent=None) -> None:
        super().__init__(colors, EXAMPLE_P, EXAMPLE_Q, min_vocab=MIN_VOCAB, side_width=400, parent=parent)
        self.setObjectName("lab_tree")
        self.set_titles(
            self.tr("Target p and draft q at one node"), self.tr("Example"),
            self.tr("<b>p, q and the final p′</b> &nbsp; <span style='color:{0}'>■</span> p &nbsp;"
                    "<span style='color:{1}'>■</span> q &nbsp;<span style='color:{2}'>■</span> p′: p with the "
                    "candidates zeroed, renormalised &nbsp; #1–#3: the candidates").format(P_COLOR, Q_COLOR, palette.CORRECTED),
            "<b>" + self.tr("First token after simulated tree rounds (95% band)") + "</b>")
        self.generator = torch.Generator().manual_seed(0)
        self.counts = toy_tree.TreeCounts(len(EXAMPLE_P))
        self.chain_counts = toy.ToyCounts(len(EXAMPLE_P))
        pick = QGroupBox(self.tr("Candidates, tested in this order"))
        row = QHBoxLayout(pick)
        self.top_q = QCheckBox(self.tr("Top 3 of q"), checked=True)
        row.addWidget(self.top_q)
        self.picks = [QComboBox() for _ in range(toy_tree.CANDIDATES)]
        for box in self.picks:
            row.addWidget(box)
        self.add_controls(pick)
        self.out_bars = pg.BarGraphItem(x=[], height=[], width=0.5, brush=P_COLOR, pen=None)
        self.out_band = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), height=np.zeros(0), beam=0.15)
        self.p_marks = pg.PlotDataItem([], [], connect="pairs")  # the law the bars must reach: p
        for item in (self.out_bars, self.out_band, self.p_marks):
            self.out_plot.addItem(item)
        self.top_q.toggled.connect(self._inputs_changed)
        for box in self.picks:
            box.currentIndexChanged.connect(self._inputs_changed)
        self.example_button.clicked.connect(self.example)
        self.set_colors(colors)
        self.example()

    def set_colors(self, colors: Colors) -> None:
        super().set_colors(colors)
        self.out_band.setData(pen=pg.mkPen(colors.text, width=1.5))
        self.p_marks.setPen(pg.mkPen(colors.text, width=3))

    # --- inputs ------------------------------------------------------------------------------
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
        self._fill_picks(size)
        super()._vocab_changed(size)

    def _inputs_changed(self) -> None:
        self.show_names()
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
        order: dict[int, list[str]] = {}
        for rank, x in enumerate(cands):
            order.setdefault(x, []).append(f"#{rank + 1}")
        ticks = [[(i, NAMES[i] + (" " + " ".join(order[i]) if i in order else "")) for i in xs]]
        self.show_laws(p, q, f.residual, ticks)
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
            self.tr("all rejected ({0:.3f}): the token is drawn from p′ = {1}").format(1 - f.tree_mass, vector_text(f.residual)),
            self.tr("<b>E[tokens per round]</b>: tree 1 + p(S) = <b>{0:.3f}</b>, chain 1 + Σ min(p, q) = "
                    "<b>{1:.3f}</b>").format(1 + f.tree_mass, 1 + f.chain_alpha),
            self.tr("Simulated rounds: <b>{0}</b>").format(n),
        ]
        self.figures_label.setText("<br>".join(lines))
        self.out_legend.setText(self.tr(
            "<span style='color:{0}'>■</span> first token of each round, decided by the engine's own tree rule "
            "&nbsp; — p (the target) &nbsp; I 95% band · the tree wins when its candidates hold more of p than "
            "q shares with p; a draft close to p, sampled, wins as a chain").format(P_COLOR))
