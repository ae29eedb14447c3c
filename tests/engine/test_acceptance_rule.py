"""The acceptance rule in isolation: emitted tokens follow p exactly, for any q (>= 100k trials)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from app.engine import DecodeParams, acceptance, logits_to_probs, sample
from app.engine.acceptance import accept
from engine.helpers import accepted_count_law, chi_square_p

P_MIN = 1e-3  # honest runs are seeded; every p-value is reported by the failure message


def first_tokens(p: torch.Tensor, q: torch.Tensor, trials: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One drafted position, `trials` times: (emitted token [trials], accepted [trials] bool)."""
    gen = torch.Generator().manual_seed(seed)
    v = p.shape[-1]
    x = sample(q.expand(trials, v), gen)
    n, y, *_ = acceptance.decide(
        p.expand(trials, 2, v), q.expand(trials, 1, v), x[:, None], gen
    )
    return torch.where(n == 1, x, y), n == 1


def histogram(tokens: torch.Tensor, v: int) -> np.ndarray:
    return torch.bincount(tokens, minlength=v).numpy()


def assert_alpha(accepted: torch.Tensor, alpha: float) -> None:
    trials = len(accepted)
    sigma = math.sqrt(max(alpha * (1 - alpha), 1e-12) / trials)
    # alpha is a float32 sum: with q == p it can read 1 + 1e-7 depending on the reduction order (threads).
    assert abs(accepted.double().mean().item() - alpha) <= 6 * sigma + 1e-6


@pytest.mark.parametrize(
    ("q", "alpha"), [((0.8, 0.2), 0.8), ((0.9, 0.1), 0.7)], ids=["seed-example-1", "seed-example-2"]
)
def test_worked_examples(q, alpha):
    p = torch.tensor([0.6, 0.4])
    tokens, accepted = first_tokens(p, torch.tensor(q), 20_000, seed=1)
    assert_alpha(accepted, alpha)
    pvalue = chi_square_p(histogram(tokens, 2), p)
    assert pvalue > P_MIN, f"output differs from p=(0.6, 0.4): p-value {pvalue:.3g}"


@pytest.mark.parametrize(("q", "wrong"), [((0.8, 0.2), (0.72, 0.28)), ((0.9, 0.1), (0.78, 0.22))])
def test_resampling_from_p_is_caught(monkeypatch, q, wrong):
    """Planted bug: after a rejection sample p instead of the residual (forced through the fallback)."""
    monkeypatch.setattr(acceptance, "RESIDUAL_EPS", float("inf"))
    tokens, _ = first_tokens(torch.tensor([0.6, 0.4]), torch.tensor(q), 20_000, seed=1)
    counts = histogram(tokens, 2)
    assert chi_square_p(counts, [0.6, 0.4]) < 1e-12
    assert chi_square_p(counts, wrong) > P_MIN  # and it is exactly the wrong rule's distribution


def random_pair(v: int, gen: torch.Generator, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Target and draft logits [V]: independent, reversed (q far from p), or identical."""
    p_logits = torch.randn(v, generator=gen) * 2
    if kind == "far":
        return p_logits, -p_logits
    if kind == "same":
        return p_logits, p_logits.clone()
    return p_logits, p_logits + torch.randn(v, generator=gen) * 1.5


SCENARIOS = {
    "T1": (DecodeParams(temperature=1.0), "near"),
    "T0.5": (DecodeParams(temperature=0.5), "near"),
    "T1.7": (DecodeParams(temperature=1.7), "near"),
    "top-k4": (DecodeParams(top_k=4), "near"),
    "top-p0.8": (DecodeParams(top_p=0.8), "near"),
    "T0.7-k6-p0.9": (DecodeParams(temperature=0.7, top_k=6, top_p=0.9), "near"),
    "q-far": (DecodeParams(temperature=1.0), "far"),
    "q-far-top-k3": (DecodeParams(top_k=3), "far"),
    "q-equals-p": (DecodeParams(temperature=0.8, top_p=0.9), "same"),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_output_follows_p(scenario):
    """3 random pairs x 4000 trials per scenario (9 scenarios: 108k trials), masks applied to p and q."""
    params, kind = SCENARIOS[scenario]
    gen = torch.Generator().manual_seed(list(SCENARIOS).index(scenario))
    for pair in range(3):
        v = int(torch.randint(4, 17, (1,), generator=gen))
        p_logits, q_logits = random_pair(v, gen, kind)
        p, q = logits_to_probs(p_logits, params), logits_to_probs(q_logits, params)
        tokens, accepted = first_tokens(p, q, 4000, seed=pair)
        assert_alpha(accepted, torch.minimum(p, q).sum().item())
        pvalue = chi_square_p(histogram(tokens, v), p.double())
        assert pvalue > P_MIN, f"{scenario} pair {pair} (V={v}): p-value {pvalue:.3g}"


def test_accepted_count_law_and_bonus():
    """gamma = 4 independent positions: n follows a1..an(1 - a_{n+1}); the bonus follows p_{gamma+1}."""
    gen = torch.Generator().manual_seed(7)
    gamma, v, trials = 4, 10, 20_000
    p = logits_to_probs(torch.randn(gamma + 1, v, generator=gen) * 2, DecodeParams())
    q = logits_to_probs(torch.randn(gamma, v, generator=gen) * 2 + p[:gamma].log(), DecodeParams())
    x = sample(q.expand(trials, gamma, v), gen)
    n, y, *_ = acceptance.decide(p.expand(trials, -1, -1), q.expand(trials, -1, -1), x, gen)
    law = accepted_count_law(torch.minimum(p[:gamma], q).sum(-1).tolist())
    counts = torch.bincount(n, minlength=gamma + 1).numpy()
    for k in range(gamma + 1):
        sigma = math.sqrt(trials * law[k] * (1 - law[k]))
        assert abs(counts[k] - trials * law[k]) <= 6 * sigma, f"n={k}: {counts[k]} vs {trials * law[k]:.0f}"
    bonus = y[n == gamma]
    assert chi_square_p(histogram(bonus, v), p[gamma].double()) > P_MIN


def test_accept_reports_what_the_rule_decided():
    """`accept` is the one-sequence form of `decide`: same draws, same decision, consistent fields."""
    gen = torch.Generator().manual_seed(3)
    p = logits_to_probs(torch.randn(4, 12, generator=gen), DecodeParams())
    q = logits_to_probs(torch.randn(3, 12, generator=gen), DecodeParams())
    for seed in range(50):
        x = sample(q, torch.Generator().manual_seed(1000 + seed))
        verdict = accept(p, q, x, torch.Generator().manual_seed(seed))
        n, y, *_ = acceptance.decide(p, q, x, torch.Generator().manual_seed(seed))
        assert (verdict.n_accepted, verdict.next_token) == (int(n), int(y))
        assert verdict.p_y == pytest.approx(p[verdict.n_accepted, verdict.next_token].item())
        assert verdict.overlap == pytest.approx(torch.minimum(p[:3], q).sum(-1).tolist())
        assert (verdict.top is None) == (verdict.n_accepted == 3)


def test_vanishing_residual_falls_back_to_p():
    """p ~ q: a rejected draft leaves a residual of ~1e-7 mass; the next token then comes from p."""
    p = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    q = torch.tensor([[0.5, 0.5 - 1e-7, 1e-7]])
    trials = 4000
    x = torch.full((trials, 1), 2)  # the drafted token p gives no mass to: always rejected
    n, y, *_ = acceptance.decide(p.expand(trials, -1, -1), q.expand(trials, -1, -1), x, torch.Generator())
    assert int(n.sum()) == 0
    assert chi_square_p(histogram(y, 3), p[0].double()) > P_MIN  # the raw residual would give token 1 only
