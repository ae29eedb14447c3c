"""View → Lab, tree tab: p at one node and three deterministic candidates. The figures are exact; the
simulated rounds go through the engine's own tree rule and land on p, and a planted sibling rule
without renormalisation lands elsewhere, which the same test catches."""

from __future__ import annotations

import pytest
import torch
from test_lab import within

from app.engine import toy_tree, tree_accept

P = [0.35, 0.25, 0.2, 0.12, 0.08]
Q = [0.15, 0.45, 0.05, 0.3, 0.05]


def test_figures_of_the_example():
    cands = toy_tree.top_candidates(Q)
    assert cands == (1, 3, 0)
    f = toy_tree.figures(P, Q, cands)
    assert f.tree_mass == pytest.approx(0.72) and f.chain_alpha == pytest.approx(0.62)
    assert f.reach == pytest.approx((1.0, 0.75, 0.63))
    assert f.accept_prob == pytest.approx((0.25, 0.16, 0.35 / 0.63))
    assert f.accepted == pytest.approx((0.25, 0.12, 0.35))  # reach * p' = p: the rule's whole point
    assert f.residual == pytest.approx((0.0, 0.0, 0.2 / 0.28, 0.0, 0.08 / 0.28))
    repeat = toy_tree.figures(P, Q, (1, 1, 0))  # a repeated candidate adds nothing and is never accepted
    assert repeat.tree_mass == pytest.approx(0.6) and repeat.accepted == pytest.approx((0.25, 0.0, 0.35))


def no_renormalisation_law(p, cands):
    """The output law when each sibling is tested against p, not p' (trap 2 of the design digest)."""
    law, left = [0.0] * len(p), 1.0
    for x in cands:
        law[x] = left * p[x]
        left *= 1 - p[x]
    mass = sum(p[x] for x in set(cands))
    return [v if i in cands else left * p[i] / (1 - mass) for i, v in enumerate(law)]


def test_tree_rounds_land_on_p_and_a_sibling_rule_without_renormalisation_is_caught(monkeypatch):
    rounds = 40_000
    cands = toy_tree.top_candidates(Q)
    counts = toy_tree.simulate(torch.tensor(P), cands, rounds, torch.Generator().manual_seed(4))
    assert within([c / rounds for c in counts.first], P, rounds)
    assert within([counts.any_accepted / rounds], [0.72], rounds)
    assert within([c / rounds for c in counts.accepted], [P[x] for x in cands], rounds)
    # the planted twin: the engine's rule with its sibling renormalisation removed
    monkeypatch.setattr(tree_accept, "sibling_mass", lambda total, earlier, p_eff: total)
    wrong = toy_tree.simulate(torch.tensor(P), cands, rounds, torch.Generator().manual_seed(4))
    shares = [c / rounds for c in wrong.first]
    assert not within(shares, P, rounds)  # p(A) 0.35 becomes 0.23: ~50 sigma
    assert within(shares, no_renormalisation_law(P, cands), rounds)


def test_lab_tree_tab(qtbot):
    from app.gui import theme
    from app.gui.lab import LabWindow
    from app.gui.qapplication import application

    lab = LabWindow(theme.apply(application(), "light"))
    qtbot.addWidget(lab)
    lab.show()
    lab.tabs.setCurrentWidget(lab.tree_lab)
    tree = lab.tree_lab
    assert lab.tabs.count() == 2 and tree.isVisible()
    assert tree.candidates() == (1, 3, 0) and tree.p() == P
    text = tree.figures_label.text()
    assert "<b>0.720</b>" in text and "<b>0.620</b>" in text and "S = {B, D, A}" in text
    items = {id(i) for i in tree.out_plot.getPlotItem().items}
    tree.simulate(20_000)
    assert {id(i) for i in tree.out_plot.getPlotItem().items} == items  # updated in place, none added
    shares, half = tree.empirical()
    assert within(shares, P, 20_000) and [float(h) for h in tree.out_bars.opts["height"]] == shares
    assert all(0 < h < 0.015 for h in half)
    assert "Simulated rounds: <b>20000</b>" in tree.figures_label.text()
    # the user's own candidates: p(S) is the sum of their p, and the counts restart
    tree.top_q.setChecked(False)
    assert all(box.isEnabled() for box in tree.picks)
    for box, x in zip(tree.picks, (0, 2, 4), strict=True):
        box.setCurrentIndex(x)
    assert tree.candidates() == (0, 2, 4) and tree.counts.rounds == 0
    assert f"<b>{P[0] + P[2] + P[4]:.3f}</b>" in tree.figures_label.text()
    tree.p_edit.spins[0].setValue(0.6)
    assert sum(tree.p()) == pytest.approx(1.0)
    assert f"<b>{tree.p()[0] + tree.p()[2] + tree.p()[4]:.3f}</b>" in tree.figures_label.text()
    tree.top_q.setChecked(True)  # back to the draft's top 3
    assert tree.candidates() == toy_tree.top_candidates(tree.q())
    tree.vocab.setValue(3)
    assert len(tree.p()) == 3 and all(0 <= x < 3 for x in tree.candidates())
    tree.run_button.click()
    qtbot.waitUntil(lambda: tree.counts.rounds > 0, timeout=10_000)
    lab.close()
    assert not tree.timer.isActive()
