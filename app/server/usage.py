"""The statistics an answer's final usage carries under `speclens`, all from app.engine.stats."""

from __future__ import annotations

from collections.abc import Sequence

from app.engine import RoundEvent
from app.engine.stats import answer_speedup, mean_accepted, speedup_series, summarize


def speclens_usage(rounds: Sequence[RoundEvent], drafter: str, baseline_step: float | None) -> dict:
    """alpha (mean exact overlap Σ min(p, q)), mean accepted drafts per round, rounds, the drafter, and the
    measured and predicted speedup over target-only (None where there is no draft or no baseline)."""
    gamma = max((r.gamma for r in rounds), default=1) or 1
    s = summarize(rounds, gamma)
    _, measured = speedup_series(rounds, baseline_step)
    predicted = answer_speedup(rounds, s.alpha, baseline_step)
    return {
        "alpha": s.alpha,
        "mean_accepted": mean_accepted(rounds),
        "rounds": s.rounds,
        "drafter": drafter,
        "gamma": gamma,
        "tokens_per_round": s.tokens_per_round,
        "histogram": s.histogram,
        "measured_speedup": measured[-1] if measured else None,
        "predicted_speedup": predicted,
        "baseline_step_seconds": baseline_step,
    }
