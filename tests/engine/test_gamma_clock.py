"""γ by the clock: the argmax of predicted tokens per second over the measured c and v(n), with nothing else capping it
(no fixed cap below the measured range, no v(n) guessed far past the passes timed, no one-step moves, no α per
position assumed to decay where live rounds say otherwise), and a tree only where it beats the best chain."""

from __future__ import annotations

import pytest

from app.engine import RoundEvent
from app.engine.policy import (
    AUTO_GAMMA_MAX,
    AutoGamma,
    DrafterProfile,
    VerifyCosts,
    best_gamma,
    choose,
    gamma_bound,
    speedup,
)
from app.engine.policy.lookup_cost import worth_proposing

STEP = 0.05
LINEAR = VerifyCosts(tuple(STEP * (1 + 0.05 * n) for n in range(1, 34)))  # v(n) = 1 + 0.05 n, timed to 33 tokens


def draft(c: float, alpha: float, **kw) -> DrafterProfile:
    return DrafterProfile("d", "d", c, alpha, **kw)


def test_gamma_is_the_argmax_of_tokens_per_second_over_the_whole_measured_range():
    for c in (0.05, 0.1, 0.3, 0.6):
        for alpha in (0.85, 0.9, 0.93, 0.97, 0.99):
            gamma, s = best_gamma(draft(c, alpha), LINEAR)
            values = {g: speedup(draft(c, alpha), g, LINEAR) for g in range(1, AUTO_GAMMA_MAX + 1)}
            assert s == pytest.approx(max(values.values()))
            assert gamma == min(g for g, v in values.items() if v >= max(values.values()) - 1e-9)


def test_a_cheap_draft_at_high_alpha_runs_long_chains_and_an_expensive_one_short():
    cheap, _ = best_gamma(draft(0.3, 0.93), LINEAR)
    dear, _ = best_gamma(draft(0.6, 0.93), LINEAR)
    assert cheap >= 6 and dear < cheap and dear <= 4  # c ≈ 0.6: short is right; c ≈ 0.3: long
    assert best_gamma(draft(0.1, 0.97), LINEAR)[0] > 8  # the old fixed cap of 8 held this one back


def test_gamma_never_reads_verify_costs_guessed_far_past_the_passes_timed():
    short = VerifyCosts(tuple(STEP * (1 + 0.01 * n) for n in range(1, 5)))  # timed to 4 tokens only
    assert gamma_bound(short) == 5  # v(6) at most: 1.5 × the 4 timed
    assert best_gamma(draft(0.01, 0.99), short)[0] == 5
    assert worth_proposing(AUTO_GAMMA_MAX, 0.99, short) <= 5
    assert gamma_bound(VerifyCosts((STEP,))) == 1 and gamma_bound(LINEAR) == AUTO_GAMMA_MAX


def test_a_tree_that_loses_on_the_clock_is_not_chosen_and_one_that_wins_is():
    chain_alpha = draft(0.3, 0.9)
    chain_gamma, chain_s = best_gamma(chain_alpha, LINEAR)
    # more tokens a round than the chain's best, but a dear tree draft: fewer tokens a second
    chain_tokens = (1 - 0.9 ** (chain_gamma + 1)) / 0.1
    losing = draft(0.3, 0.9, tree_accepted=tuple(min(chain_tokens, 0.5 * n) for n in range(1, 33)), tree_c=3.0)
    choice = choose([losing], LINEAR)
    assert not choice.tree and choice.gamma == chain_gamma and choice.predicted == pytest.approx(chain_s)
    assert choice.tree_limit is not None and choice.tree_limit.kind == "tree"
    winning = draft(0.3, 0.9, tree_accepted=tuple(min(8.0, 0.8 * n) for n in range(1, 33)), tree_c=0.5)
    assert choose([winning], LINEAR).tree


def _round(i, drafted, accepted, overlap, draft_s, verify_s, context=300):
    return RoundEvent(round=i, gamma=drafted, drafted=drafted, accepted=accepted, emitted=accepted + 1,
                      bonus=accepted == drafted, overlap=tuple(overlap), draft_time=draft_s, verify_time=verify_s,
                      context=context)


def test_live_alpha_per_position_lengthens_gamma_past_positions_never_proposed():
    # The probe saw α 0.7; the chat's rounds accept at 0.95 at every position they score. Positions past the
    # running γ are never scored, so left at 0.7 they would hold γ where it started.
    auto = AutoGamma(draft(0.3, 0.7), LINEAR)
    start = auto.gamma()
    for i in range(1, 40):
        g = auto.gamma()
        auto.observe(_round(i, g, g, [0.95] * g, 0.3 * STEP * g, LINEAR.v(g + 1) * STEP))
    assert start <= 3 and auto.gamma() >= best_gamma(draft(0.3, 0.95), LINEAR)[0] - 1
    assert auto.profile.alpha_at(AUTO_GAMMA_MAX) > 0.9


def test_the_controller_jumps_to_the_argmax_rather_than_stepping():
    auto = AutoGamma(draft(0.3, 0.5), LINEAR, weight=1.0)
    assert auto.gamma() <= 2
    auto.observe(_round(1, auto.gamma(), auto.gamma(), [0.97] * auto.gamma(), 0.3 * STEP, LINEAR.v(2) * STEP))
    assert auto.gamma() >= 6


def test_measured_per_position_decay_is_kept_where_live_rounds_have_not_scored():
    falling = draft(0.1, 0.7, per_position=(0.9, 0.8, 0.6, 0.4))
    auto = AutoGamma(falling, LINEAR, weight=1.0)
    auto.observe(_round(1, 2, 2, [0.9, 0.8], 0.1 * STEP * 2, LINEAR.v(3) * STEP))
    alphas = auto.profile.per_position
    assert alphas[:2] == pytest.approx((0.9, 0.8)) and alphas[2] == pytest.approx(0.6) and alphas[3] == pytest.approx(0.4)
