"""The cost of prompt lookup decided per round, and of lookup where it pays else a draft (lookup_else.py).

A lookup proposal costs nothing to make, so the only question each round is whether verifying k
proposed tokens beats the round that runs instead: with α_i the acceptance at match position i (the
earlier ones accepted), k tokens give E(k) = 1 + α_1 + α_1α_2 + … + α_1…α_k tokens for v(k + 1) target
steps, against `baseline` tokens per step (1: a target step). Pure arithmetic: no torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .cost import AUTO_GAMMA_MAX, DrafterProfile, VerifyCosts, expected_tokens, gamma_bound, speedup


def worth_proposing(n: int, alpha: float | Sequence[float], verify: VerifyCosts, baseline: float = 1.0) -> int:
    """The k in 0..n with the best expected tokens per target step; 0 when none beats `baseline` tokens
    per step (1.0: a target step). alpha: one α, or α per position (the last one past the end)."""
    alphas = (alpha,) if isinstance(alpha, int | float) else tuple(alpha)
    best_k, best = 0, baseline
    expected, run = 1.0, 1.0
    for k in range(1, gamma_bound(verify, n) + 1 if n > 0 else 1):
        run *= alphas[min(k, len(alphas)) - 1]
        expected += run
        rate = expected / verify.v(k + 1)
        if rate > best + 1e-9:
            best_k, best = k, rate
    return best_k


def round_yield(profile: DrafterProfile, gamma: int, verify: VerifyCosts) -> tuple[float, float]:
    """(E[tokens], cost in target steps) of one round in which `profile` proposes γ tokens: cost.speedup
    at full coverage is their ratio."""
    tokens = expected_tokens(profile, gamma)
    return tokens, tokens / speedup(replace(profile, coverage=1.0), gamma, verify)


def mixed_speedup(share: float, lookup: tuple[float, float], draft: tuple[float, float]) -> float:
    """Tokens per target step when a `share` of rounds are lookup rounds and the rest draft rounds, each
    given as (E[tokens], cost in target steps)."""
    tokens = share * lookup[0] + (1 - share) * draft[0]
    return tokens / (share * lookup[1] + (1 - share) * draft[1])


def predict(lookup: DrafterProfile, draft: DrafterProfile, gamma: int, verify: VerifyCosts,
            lookup_max: int = AUTO_GAMMA_MAX) -> tuple[int, float]:
    """(lookup proposal length k, predicted speedup) with the draft at γ: lookup rounds in the share of
    rounds it found a match in (its measured coverage), proposing the k its α predicts to beat a draft
    round (0: it never proposes, so the draft's own speedup); draft rounds elsewhere."""
    drafted = round_yield(draft, gamma, verify)
    k = worth_proposing(lookup_max, lookup.alpha, verify, max(1.0, drafted[0] / drafted[1]))
    if k == 0:
        return 0, drafted[0] / drafted[1]
    return k, mixed_speedup(lookup.coverage, round_yield(replace(lookup, per_position=()), k, verify), drafted)


def best_draft_gamma(lookup: DrafterProfile, draft: DrafterProfile, verify: VerifyCosts,
                     gamma_max: int = AUTO_GAMMA_MAX) -> tuple[int, float]:
    """(the draft's γ, predicted speedup) maximising `predict` over 1..gamma_max; the smaller γ on ties."""
    best = (1, predict(lookup, draft, 1, verify, gamma_max)[1])
    for gamma in range(2, gamma_bound(verify, gamma_max) + 1):
        s = predict(lookup, draft, gamma, verify, gamma_max)[1]
        if s > best[1] + 1e-9:
            best = (gamma, s)
    return best
