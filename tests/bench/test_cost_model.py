"""The speedup model with a measured verification cost (Leviathan et al. 3.4, extended)."""

import pytest

from app.bench.costs import StepCosts
from app.engine.stats import expected_tokens_per_round, predicted_speedup


def test_teaching_example_from_the_seed():
    # alpha 0.5, c 0.1: gamma 2 gives 1.75 tokens for cost 1.2; gamma 4 is slower.
    assert predicted_speedup(0.5, 2, 0.1) == pytest.approx(1.75 / 1.2)
    assert predicted_speedup(0.5, 4, 0.1) == pytest.approx(1.9375 / 1.4)
    assert predicted_speedup(0.5, 4, 0.1) < predicted_speedup(0.5, 2, 0.1)


def test_verification_cost_replaces_the_one_target_step():
    assert predicted_speedup(0.8, 4, 0.2, verify_cost=1.45) == pytest.approx(
        expected_tokens_per_round(0.8, 4) / (4 * 0.2 + 1.45)
    )
    assert predicted_speedup(0.8, 4, 0.2, verify_cost=1.45) < predicted_speedup(0.8, 4, 0.2)


def test_perfect_draft_limit():
    assert expected_tokens_per_round(1.0, 4) == 5.0
    assert predicted_speedup(1.0, 4, 0.0) == 5.0


def test_step_costs_ratios():
    costs = StepCosts(target_step=0.02, verify_step=0.03, draft_step=0.012)
    assert costs.c == pytest.approx(0.6)
    assert costs.verify_cost == pytest.approx(1.5)
    assert StepCosts(0.02, 0.03, None).c == 0.0
    assert costs.to_json()["verify_cost"] == pytest.approx(1.5)
