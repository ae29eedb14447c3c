"""Statistics over hand-built rounds, and the seed's teaching example of the speedup model."""

from __future__ import annotations

import pytest

from app.engine import RoundEvent, predicted_speedup, summarize
from app.engine.stats import (
    acceptance_histogram,
    alpha_estimate,
    alpha_from_acceptances,
    expected_tokens_per_round,
    per_position_acceptance,
)


@pytest.mark.parametrize(("gamma", "tokens", "speedup"), [(2, 1.75, 1.46), (4, 1.9375, 1.38)])
def test_teaching_example(gamma, tokens, speedup):
    assert expected_tokens_per_round(0.5, gamma) == pytest.approx(tokens)
    assert predicted_speedup(0.5, gamma, 0.1) == pytest.approx(speedup, abs=0.005)


def test_alpha_one_drafts_are_all_accepted():
    assert expected_tokens_per_round(1.0, 4) == 5.0


def test_measured_verification_cost_replaces_the_one():
    assert predicted_speedup(0.5, 2, 0.1, verify_cost=1.45) == pytest.approx(1.75 / 1.65)


def rnd(i, drafted, accepted, overlap):
    bonus = drafted > 0 and accepted == drafted
    return RoundEvent(round=i, gamma=3, drafted=drafted, accepted=accepted, emitted=accepted + 1, bonus=bonus,
                      overlap=overlap, draft_time=0.01 * drafted, verify_time=0.02)


ROUNDS = [
    rnd(0, 3, 0, (0.5, 0.6, 0.7)),
    rnd(1, 3, 3, (0.9, 0.8, 0.7)),
    rnd(2, 3, 1, (0.6, 0.6, 0.6)),
    rnd(3, 2, 2, (1.0, 1.0)),  # shortened draft, all accepted
    rnd(4, 0, 0, ()),  # no draft (no n-gram match): not part of the acceptance statistics
]


def test_histogram_and_per_position():
    assert acceptance_histogram(ROUNDS, 3) == [1, 1, 1, 1]
    # slot 1 tested in rounds 0-3 (passed in 1, 2, 3); slot 2 in 1-3 (passed 1, 3); slot 3 in round 1 only.
    assert per_position_acceptance(ROUNDS, 3) == [pytest.approx(3 / 4), pytest.approx(2 / 3), 1.0]


def test_alpha_estimates():
    assert alpha_estimate(ROUNDS) == pytest.approx(sum([1.8, 2.4, 1.8, 2.0]) / 11)
    assert alpha_from_acceptances(ROUNDS) == pytest.approx(6 / (1 + 3 + 2 + 2))
    assert alpha_estimate([]) is None and alpha_from_acceptances([]) is None


def test_summary():
    s = summarize(ROUNDS, 3)
    assert (s.rounds, s.new_tokens) == (5, 1 + 4 + 2 + 3 + 1)
    assert s.tokens_per_round == pytest.approx(11 / 5)
    assert s.histogram == [1, 1, 1, 1]
    assert s.draft_time_per_token == pytest.approx(0.01)


def test_round_shape_leaves_the_prefill_round_out_and_counts_a_trees_nodes():
    from app.engine.stats import round_shape

    def r(i, drafted, emitted, nodes=0):
        tree = {"tree_tokens": (1,) * nodes, "tree_parents": (-1,) * nodes} if nodes else {}
        return RoundEvent(round=i, gamma=4, drafted=drafted, accepted=emitted - 1, emitted=emitted, bonus=False,
                          overlap=(), draft_time=0.0, verify_time=0.0, **tree)

    assert round_shape([]) is None
    chain = round_shape([r(0, 4, 5), r(1, 4, 3), r(2, 2, 1)])  # round 0 carries the prefill: left out
    assert (chain.rounds, chain.tokens_per_round, chain.verified_per_round, chain.tree_nodes) == (2, 2.0, 4.0, None)
    tree = round_shape([r(0, 3, 4, nodes=8), r(1, 3, 4, nodes=8), r(2, 0, 1), r(3, 1, 2, nodes=4)])
    assert tree.verified_per_round == pytest.approx((9 + 1 + 5) / 3) and tree.tree_nodes == 6.0
    only = round_shape([r(0, 4, 5)])  # a one-round answer: its only round counts
    assert (only.tokens_per_round, only.verified_per_round) == (5.0, 5.0)


def test_an_answers_formula_weighs_the_rounds_that_proposed():
    """Per-round lookup: half the rounds propose 3 tokens (all accepted, α 1), half are target steps. Each
    round's verify costs one step and drafting nothing, so the answer ran at (0.5·4 + 0.5·1) tokens a step:
    2.5×. The formula at full share and the largest γ (the planted twin: what the plot drew before) says 4×."""
    from app.engine.stats import answer_speedup

    step = 0.02
    rounds = [RoundEvent(round=0, gamma=3, drafted=0, accepted=0, emitted=1, bonus=False, overlap=(),
                         draft_time=0.0, verify_time=0.5)]
    for i in range(1, 21):
        proposes = i % 2 == 1
        rounds.append(RoundEvent(round=i, gamma=3, drafted=3 if proposes else 0, accepted=3 if proposes else 0,
                                 emitted=4 if proposes else 1, bonus=proposes, overlap=(1.0,) * 3 if proposes else (),
                                 draft_time=0.0, verify_time=step))
    assert answer_speedup(rounds, 1.0, step) == pytest.approx(2.5)
    assert predicted_speedup(1.0, 3, 0.0, 1.0) == pytest.approx(4.0)
    assert answer_speedup(rounds[:1], 1.0, step) is None and answer_speedup(rounds, None, step) is None
