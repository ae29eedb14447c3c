"""The seeds' worked example as a simulation: a context-free pair p, q over a tiny vocabulary, rounds
of γ drafts decided by the engine's own `decide` (the code that decides real rounds), and beside it
the wrong rule that resamples from p after a rejection. Used by the GUI lab and its tests."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .acceptance import decide
from .sampling import sample


@dataclass(frozen=True, slots=True)
class ToyFigures:
    """What the formulas say for p and q (all exact, no sampling)."""

    alpha: float  # sum_x min(p, q): the chance one draft is accepted
    residual: tuple[float, ...]  # norm(max(p - q, 0)); p itself when p == q (no rejection happens)
    correct: tuple[float, ...]  # the output law under the rule: min(p, q) + (1 - alpha) residual = p
    wrong: tuple[float, ...]  # resampling from p after a rejection: min(p, q) + (1 - alpha) p
    expected_tokens: float  # E[tokens per round] = (1 - alpha^(gamma + 1)) / (1 - alpha)
    speedup: float  # E[tokens] / (1 + gamma c): Leviathan et al.'s formula, verification = 1 target step


def figures(p: list[float], q: list[float], gamma: int, c: float) -> ToyFigures:
    """p, q [V] probabilities (each summing to 1)."""
    overlap = [min(a, b) for a, b in zip(p, q, strict=True)]
    alpha = sum(overlap)
    excess = [max(a - b, 0.0) for a, b in zip(p, q, strict=True)]
    mass = sum(excess)
    residual = [e / mass for e in excess] if mass > 1e-12 else list(p)
    reject = 1.0 - alpha
    correct = [m + reject * r for m, r in zip(overlap, residual, strict=True)]
    wrong = [m + reject * a for m, a in zip(overlap, p, strict=True)]
    tokens = float(gamma + 1) if reject < 1e-12 else (1 - alpha ** (gamma + 1)) / reject
    return ToyFigures(alpha, tuple(residual), tuple(correct), tuple(wrong), tokens, tokens / (1 + gamma * c))


@dataclass
class ToyCounts:
    """Running totals of simulated rounds: the first token of each round is the next token after the
    (fixed) prefix, so its histogram must converge to p under the rule."""

    vocab: int
    rounds: int = 0
    correct: list[int] | None = None  # first emitted token of each round, the engine's rule
    wrong: list[int] | None = None  # the same rounds with a rejection resampled from p
    first_accepted: int = 0  # rounds whose first draft passed: estimates alpha
    emitted: int = 0  # tokens emitted by all rounds: estimates E[tokens per round]

    def __post_init__(self) -> None:
        self.correct = self.correct or [0] * self.vocab
        self.wrong = self.wrong or [0] * self.vocab


def simulate(p: torch.Tensor, q: torch.Tensor, gamma: int, rounds: int, generator: torch.Generator,
             counts: ToyCounts | None = None) -> ToyCounts:
    """Run `rounds` rounds at once and add them to counts. p [V], q [V] float probabilities."""
    v = p.shape[-1]
    counts = counts or ToyCounts(v)
    x = sample(q.expand(rounds, gamma, v), generator)  # [R, g] drafts from q
    n, y, *_ = decide(p.expand(rounds, gamma + 1, v), q.expand(rounds, gamma, v), x, generator)
    first = torch.where(n > 0, x[:, 0], y)  # [R]
    # The wrong rule keeps every decision and only swaps the residual for p at the rejection.
    resampled = sample(p.expand(rounds, v), generator)
    first_wrong = torch.where(n > 0, x[:, 0], resampled)
    for total, tokens in ((counts.correct, first), (counts.wrong, first_wrong)):
        assert total is not None  # filled by __post_init__
        for k, c in enumerate(torch.bincount(tokens, minlength=v).tolist()):
            total[k] += c
    counts.rounds += rounds
    counts.first_accepted += int((n > 0).sum())
    counts.emitted += int((n + 1).sum())
    return counts
