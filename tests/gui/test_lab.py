"""View → Lab: the seeds' worked example. Figures are exact; simulated rounds go through the
engine's own `decide` and must land on p, while the wrong rule lands on its biased law."""

from __future__ import annotations

import math

import pytest
import torch

from app.engine import toy


def test_paper_example_figures():
    f = toy.figures([0.6, 0.4], [0.8, 0.2], gamma=2, c=0.1)
    assert f.alpha == pytest.approx(0.8)
    assert f.residual == pytest.approx((0.0, 1.0))
    assert f.correct == pytest.approx((0.6, 0.4))
    assert f.wrong == pytest.approx((0.72, 0.28))
    # seeds' cost example: alpha 0.5, c 0.1 -> gamma 2: E[N] 1.75, speedup 1.46; gamma 4: 1.9375, 1.38
    half = toy.figures([0.5, 0.5], [1.0, 0.0], gamma=2, c=0.1)
    assert (half.alpha, half.expected_tokens) == pytest.approx((0.5, 1.75))
    assert half.speedup == pytest.approx(1.46, abs=0.005)
    assert toy.figures([0.5, 0.5], [1.0, 0.0], gamma=4, c=0.1).speedup == pytest.approx(1.38, abs=0.005)
    assert toy.figures([0.3, 0.7], [0.3, 0.7], gamma=3, c=0.0).expected_tokens == 4.0  # p == q: all accepted


def within(shares, law, rounds, sigmas=5.0) -> bool:
    return all(abs(s - a) <= sigmas * math.sqrt(a * (1 - a) / rounds) + 1e-12 for s, a in zip(shares, law, strict=True))


def test_simulation_lands_on_p_and_the_wrong_rule_on_its_bias():
    rounds = 40_000
    counts = toy.simulate(torch.tensor([0.6, 0.4]), torch.tensor([0.8, 0.2]), 3, rounds,
                          torch.Generator().manual_seed(5))
    correct = [c / rounds for c in counts.correct]
    wrong = [c / rounds for c in counts.wrong]
    assert within(correct, (0.6, 0.4), rounds)
    assert within(wrong, (0.72, 0.28), rounds)
    assert not within(wrong, (0.6, 0.4), rounds)  # 0.12 apart is ~50 sigma: the bias is plain
    assert within([counts.first_accepted / rounds], [0.8], rounds)
    expected = toy.figures([0.6, 0.4], [0.8, 0.2], 3, 0.0).expected_tokens
    assert abs(counts.emitted / rounds - expected) < 0.03


def test_simulation_uses_the_engines_decide(monkeypatch):
    """A planted bug in the engine's rule shows in the lab: it runs decide, not a copy of it."""
    from app.engine import acceptance

    monkeypatch.setattr(acceptance, "RESIDUAL_EPS", float("inf"))  # residual -> p: the wrong rule
    rounds = 20_000
    counts = toy.simulate(torch.tensor([0.6, 0.4]), torch.tensor([0.8, 0.2]), 2, rounds,
                          torch.Generator().manual_seed(1))
    assert within([c / rounds for c in counts.correct], (0.72, 0.28), rounds)


def test_lab_window_paper_example(qtbot):
    from app.gui import theme
    from app.gui.lab import LabWindow
    from app.gui.qapplication import application

    lab = LabWindow(theme.apply(application(), "light"))
    qtbot.addWidget(lab)
    lab.show()
    chain = lab.chain
    chain.set_distributions([0.3, 0.3, 0.4], [0.2, 0.5, 0.3])
    chain.example_button.click()
    assert chain.vocab.value() == 2 and chain.p() == [0.6, 0.4] and chain.q() == [0.8, 0.2]
    text = chain.figures_label.text()
    assert "<b>0.800</b>" in text and "(0.6, 0.4)" in text and "(0.72, 0.28)" in text
    chain.simulate(20_000)
    correct, c_half, wrong, w_half = chain.empirical()
    assert within(correct, (0.6, 0.4), 20_000) and within(wrong, (0.72, 0.28), 20_000)
    assert [float(h) for h in chain.correct_bars.opts["height"]] == correct
    assert all(0 < h < 0.01 for h in c_half + w_half)  # the band is drawn and narrow at 20k rounds
    assert "Simulated rounds: <b>20000</b>" in chain.figures_label.text()
    # Editing keeps each distribution normalised and restarts the counts.
    chain.p_edit.spins[0].setValue(0.9)
    assert chain.p() == pytest.approx([0.9, 0.1]) and chain.counts.rounds == 0
    chain.vocab.setValue(4)
    assert len(chain.p()) == 4 and sum(chain.p()) == pytest.approx(1.0) and sum(chain.q()) == pytest.approx(1.0)
    chain.run_button.click()
    qtbot.waitUntil(lambda: chain.counts.rounds > 0, timeout=10_000)
    chain.run_button.click()
    assert not chain.timer.isActive()
