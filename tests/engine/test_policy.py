"""Choosing the drafter and γ by measured cost: the formula, the choice, the live controller, exactness."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from app.drafting.reasons import choice_reason, limit_text
from app.engine import DecodeParams, FinishedEvent, ModelDrafter, RoundEvent, decode, generate
from app.engine.policy import (
    AutoGamma,
    DrafterProfile,
    VerifyCosts,
    best_gamma,
    choose,
    expected_tokens,
    gamma_bound,
    speedup,
)
from app.engine.stats import expected_tokens_per_round, predicted_speedup
from engine.helpers import chi_square_p, exact_joint

FLAT = VerifyCosts((0.05,) * 10)  # verification as cheap as one step: the paper's assumption
CPU = VerifyCosts((0.050, 0.055, 0.0585, 0.063, 0.0665, 0.072, 0.078, 0.083, 0.089, 0.095))  # this CPU's shape


def profile(c: float, alpha: float, name: str = "d", **kw) -> DrafterProfile:
    return DrafterProfile(name, name, c, alpha, **kw)


def test_expected_tokens_is_leviathans_formula_for_one_alpha():
    for alpha in (0.0, 0.3, 0.8, 0.98):
        for gamma in (1, 2, 5, 8):
            assert expected_tokens(profile(0.1, alpha), gamma) == pytest.approx(
                expected_tokens_per_round(alpha, gamma))


def test_speedup_matches_the_paper_with_flat_verify_cost():
    # Teaching example (seed 000): alpha 0.5, c 0.1: gamma 2 gives 1.46, gamma 4 gives 1.38.
    p = profile(0.1, 0.5)
    assert speedup(p, 2, FLAT) == pytest.approx(1.75 / 1.2)
    assert speedup(p, 4, FLAT) == pytest.approx(1.9375 / 1.4)
    assert best_gamma(p, FLAT) == (2, pytest.approx(1.75 / 1.2))
    for gamma in range(1, 9):
        assert speedup(p, gamma, CPU) == pytest.approx(predicted_speedup(0.5, gamma, 0.1, CPU.v(gamma + 1)))


def test_best_gamma_is_the_argmax_of_the_formula():
    for c in (0.01, 0.05, 0.3):
        for alpha in (0.2, 0.4, 0.7, 0.95):
            gamma, s = best_gamma(profile(c, alpha), CPU)
            values = [predicted_speedup(alpha, g, c, CPU.v(g + 1)) for g in range(1, gamma_bound(CPU) + 1)]
            assert s == pytest.approx(max(values)) and gamma == 1 + int(np.argmax(values))


def test_per_position_acceptance_changes_the_expected_length():
    falling = profile(0.05, 0.5, per_position=(0.8, 0.5, 0.2))
    assert expected_tokens(falling, 3) == pytest.approx(1 + 0.8 + 0.8 * 0.5 + 0.8 * 0.5 * 0.2)
    assert expected_tokens(falling, 5) == pytest.approx(1 + 0.8 + 0.4 + 0.08 + 0.016 + 0.0032)


def test_verify_costs_extrapolate_past_the_table():
    v = VerifyCosts((1.0, 1.2, 1.5))
    assert v.v(1) == 1.0 and v.v(3) == 1.5 and v.v(5) == pytest.approx(2.1)


def test_the_slow_drafter_is_never_picked():
    slow = profile(1.05, 0.98, "self")  # the bf16 self-draft on this CPU
    cheap = profile(0.05, 0.4, "trained")
    for order in ((slow, cheap), (cheap, slow)):
        choice = choose(order, CPU)
        assert choice.drafter == "trained"
        assert choice.gamma == best_gamma(cheap, CPU)[0]
        assert [o.name for o in choice.options] == ["trained", "self"]


def test_nothing_faster_means_target_only_with_the_reason():
    choice = choose([profile(1.05, 0.98, "self-draft")], CPU)
    assert choice.target_only and choice.predicted == 1.0
    assert "draft costs 1.05 target steps on this CPU" in choice_reason(choice)
    low = choose([profile(0.05, 0.05, "weak")], CPU)
    assert low.target_only and "acceptance α 0.05 is too low" in choice_reason(low)
    assert choose([], CPU).target_only


def test_a_gain_below_the_margin_is_not_taken():
    p = profile(0.05, 0.17)
    predicted = best_gamma(p, CPU)[1]
    assert 1.0 < predicted < 1.03
    assert choose([p], CPU).target_only
    assert choose([p], CPU, margin=1.0).drafter == "d"


def test_prompt_lookup_that_rarely_matches_is_discounted():
    always = profile(0.001, 0.6, coverage=1.0)
    rarely = profile(0.001, 0.6, coverage=0.1)
    assert best_gamma(rarely, CPU)[1] < best_gamma(always, CPU)[1]
    assert best_gamma(rarely, CPU)[1] > 1.0  # a round without a match is a plain target step


def _round(i, drafted, accepted, overlap, draft_time, verify_time):
    return RoundEvent(round=i, gamma=drafted, drafted=drafted, accepted=accepted, emitted=accepted + 1,
                      bonus=accepted == drafted, overlap=tuple(overlap), draft_time=draft_time,
                      verify_time=verify_time)


def test_auto_gamma_follows_live_acceptance():
    auto = AutoGamma(profile(0.05, 0.5), CPU)
    start = auto.gamma()
    for i in range(1, 30):  # every draft accepted: longer drafts pay
        g = auto.gamma()
        auto.observe(_round(i, g, g, [0.99] * g, 0.0025 * g, CPU.v(g + 1) * CPU.step))
    assert auto.gamma() > start
    for i in range(30, 80):  # almost nothing accepted: the shortest draft, then none
        g = auto.gamma()
        auto.observe(_round(i, g, 0, [0.02] * g, 0.0025 * g, CPU.v(g + 1) * CPU.step))
    assert auto.predicted < 1.0 and auto.stopped and auto.gamma() == 0


def test_a_losing_drafter_stops_within_sixteen_rounds_and_explores():
    from app.engine.policy.live import DROP_AFTER, EXPLORE_EVERY

    auto = AutoGamma(profile(0.05, 0.5), CPU)
    rounds = 0
    while auto.gamma() > 0:  # every proposal rejected
        g = auto.gamma()
        rounds += 1
        auto.observe(_round(rounds, g, 0, [0.01] * g, 0.0025 * g, CPU.v(g + 1) * CPU.step))
    assert rounds <= DROP_AFTER
    for _ in range(EXPLORE_EVERY):  # target steps: γ 0 rounds
        assert auto.gamma() == 0
        rounds += 1
        auto.observe(_round(rounds, 0, 0, [], 0.0, CPU.seconds[0]))
    assert auto.gamma() >= 1  # one exploring round
    # the twin: a drafter whose proposals are all accepted is never stopped
    good = AutoGamma(profile(0.05, 0.5), CPU)
    for i in range(1, 60):
        g = good.gamma()
        assert g >= 1
        good.observe(_round(i, g, g, [0.99] * g, 0.0025 * g, CPU.v(g + 1) * CPU.step))


def test_auto_gamma_follows_live_draft_cost():
    auto = AutoGamma(profile(0.02, 0.8), CPU)
    cheap = auto.gamma()
    for i in range(1, 60):  # the draft turns out to cost half a target step per token
        g = auto.gamma()
        auto.observe(_round(i, g, g - 1, [0.8] * g, 0.025 * g, CPU.v(g + 1) * CPU.step))
    assert auto.gamma() < cheap
    assert auto.profile.c == pytest.approx(0.5, rel=0.05)


def test_a_per_round_draft_cost_is_paid_once_a_round():
    """t_draft = c_round + γ c: a round's fixed cost weighs most on γ 1, so it can move the best γ up."""
    p = profile(0.1, 0.7, c_round=0.5)
    for gamma in (1, 3):
        assert speedup(p, gamma, CPU) == pytest.approx(
            expected_tokens(p, gamma) / (0.5 + gamma * 0.1 + CPU.v(gamma + 1)))
    assert best_gamma(p, CPU)[0] > best_gamma(profile(0.1, 0.7), CPU)[0]


def test_auto_gamma_learns_the_token_cost_beside_the_round_cost():
    """Live rounds that cost exactly c_round + γ c leave c where it was; counted per token they would not."""
    auto = AutoGamma(profile(0.1, 0.6, c_round=0.3), CPU)
    step = CPU.step
    for i in range(1, 40):
        g = auto.gamma()
        auto.observe(_round(i, g, g - 1, [0.6] * g, (0.3 + 0.1 * g) * step, CPU.v(g + 1) * CPU.step))
    assert auto.profile.c == pytest.approx(0.1, rel=0.02) and auto.profile.c_round == 0.3


def test_a_live_step_prices_the_chats_own_passes():
    """Calibrated at a long context v(2) is 1.0; in this chat a target step takes 0.05 s and a 2-row round
    0.065 s (1.3 steps). Given the chat's step (the window's speedup baseline), the live plan prices v(2)
    at 1.3; without it (the planted twin) the plan keeps the calibrated 1.0 and promises more."""
    flat = VerifyCosts((0.05, 0.05, 0.055, 0.06))
    p = profile(0.1, 0.4)
    told, untold = AutoGamma(p, flat, gamma_max=1), AutoGamma(p, flat, gamma_max=1)
    told.observe_step(0.05)
    for i in range(1, 40):
        for auto in (told, untold):
            auto.observe(_round(i, 1, 0, [0.4], 0.005, 0.065))
    assert told.verify.v(2) == pytest.approx(1.3, abs=0.01)
    assert told.predicted == pytest.approx(1.4 / (0.1 + 1.3), rel=0.02)
    assert untold.verify.v(2) == 1.0 and untold.predicted > told.predicted + 0.2


def test_a_tree_plan_with_a_live_step_is_the_chats_own_rounds():
    from app.engine.policy import TreeSize

    p = profile(0.05, 0.5, tree_accepted=(0.5, 0.8, 1.0), tree_c=0.2)
    live = TreeSize(p, CPU, nodes=3)
    live.observe_step(0.05)
    for i in range(1, 40):
        live.observe(replace(_round(i, 1, 1, [0.5], 0.01, 0.1), tree_tokens=(4, 5, 6), tree_parents=(-1, -1, 0),
                             tree_p=(0.6, 0.3, 0.5)))
    assert live.predicted == pytest.approx(live.tokens_per_round / ((0.01 + 0.1) / 0.05), rel=0.01)


def test_auto_gamma_ignores_the_prefill_round():
    auto = AutoGamma(profile(0.05, 0.5), CPU)
    auto.observe(_round(0, 2, 0, [0.0, 0.0], 5.0, 5.0))
    assert auto.rounds == 0 and auto.profile.alpha == pytest.approx(0.5)


def _auto_decode(target, drafter, ids, params, auto, vocab=34):
    """decode() with gamma chosen by `auto` before every round, fed every RoundEvent."""
    events = []
    for e in decode(target, ids, drafter, lambda: replace(params, gamma=auto.gamma()), vocab_size=vocab):
        if isinstance(e, RoundEvent):
            auto.observe(e)
        events.append(e)
    return events


def test_auto_gamma_keeps_greedy_output_identical(vocab34_pair):
    target, draft = vocab34_pair
    ids = torch.tensor([0, 5, 9, 12, 3])
    params = DecodeParams(temperature=0.0, max_new_tokens=60)
    reference = generate(target, ids, None, params, vocab_size=34).token_ids
    auto = AutoGamma(profile(0.05, 0.6), CPU, weight=1.0)  # reacts to every round: gamma moves a lot
    events = _auto_decode(target, ModelDrafter(draft), ids, params, auto)
    gammas = {e.gamma for e in events if isinstance(e, RoundEvent)}
    assert len(gammas) > 1
    assert next(e for e in events if isinstance(e, FinishedEvent)).token_ids == tuple(reference)


def test_auto_gamma_keeps_the_joint_distribution(vocab8_pair):
    """gamma chosen from past rounds' random outcomes must not bias what comes next."""
    target, draft = vocab8_pair
    params = DecodeParams(temperature=1.0, max_new_tokens=3)
    exact = exact_joint(target, [3], params, 8)
    counts = np.zeros(8**3, dtype=np.int64)
    drafter = ModelDrafter(draft)
    gammas = set()
    for seed in range(4000):
        auto = AutoGamma(profile(0.05, 0.6), FLAT, gamma_max=3, weight=1.0)
        events = _auto_decode(target, drafter, torch.tensor([3]), replace(params, seed=seed), auto, vocab=8)
        gammas.update(e.gamma for e in events if isinstance(e, RoundEvent) and e.round > 0)
        fin = events[-1]
        counts[fin.token_ids[0] * 64 + fin.token_ids[1] * 8 + fin.token_ids[2]] += 1
    pvalue = chi_square_p(counts, exact)
    print(f"auto gamma: chi-square p-value {pvalue:.4g}, gammas {sorted(gammas)}")
    assert len(gammas) > 1 and pvalue > 1e-3


# --- token trees: sized by the same formula -----------------------------------------------------
from app.engine.policy import TREE_DEPTH, best_nodes, option_for  # noqa: E402

CPU32 = VerifyCosts(tuple(0.050 * (1 + 0.06 * (n - 1)) for n in range(1, 34)))  # v(n) = 1 + 0.06 (n - 1)


def tree_profile(accepted, tree_c=0.3, **kw) -> DrafterProfile:
    return profile(0.1, 0.3, per_position=(0.3,), tree_accepted=tuple(accepted), tree_c=tree_c, **kw)


def test_tree_speedup_is_the_chain_formula_with_the_trees_numbers():
    p = tree_profile([0.5, 0.8, 1.0, 1.1], tree_c=0.3)
    for n in (1, 2, 4, 7):
        accepted = p.tree_accepted[min(n, 4) - 1]
        assert speedup(p, TREE_DEPTH, CPU32, nodes=n) == pytest.approx((1 + accepted) / (0.3 + CPU32.v(n + 1)))
    assert speedup(p, 3, CPU32) == pytest.approx(expected_tokens(p, 3) / (3 * 0.1 + CPU32.v(4)))  # nodes=0: the chain
    n, s = best_nodes(p, CPU32)
    values = [speedup(p, TREE_DEPTH, CPU32, nodes=k) for k in range(1, 33)]
    assert s == pytest.approx(max(values)) and n == 1 + int(np.argmax(values))
    assert best_nodes(profile(0.1, 0.3), CPU32) == (0, 0.0)  # no measured tree


def test_a_tree_is_priced_by_its_own_pass_when_timed():
    """v_tree (a 4D-masked tree pass, timed as such) prices a tree; the chain keeps v. Unmeasured: v."""
    p = tree_profile([0.5, 0.8, 1.0, 1.1], tree_c=0.3)
    timed = replace(CPU32, tree_seconds=tuple(2 * s for s in CPU32.seconds))
    assert timed.v_tree(5) == pytest.approx(2 * CPU32.v(5)) and CPU32.v_tree(5) == CPU32.v(5)
    assert speedup(p, TREE_DEPTH, timed, nodes=4) == pytest.approx((1 + 1.1) / (0.3 + 2 * CPU32.v(5)))
    assert speedup(p, 3, timed) == speedup(p, 3, CPU32)


def test_choice_takes_the_tree_when_it_pays_and_says_why_when_it_does_not():
    rising = [0.3 * k for k in range(1, 9)] + [2.4] * 24  # 0.3 more tokens per node up to 8 nodes
    good = tree_profile(rising, tree_c=0.2, name="good")
    choice = choose([good], CPU32)
    assert choice.tree and choice.nodes == best_nodes(good, CPU32)[0] and choice.gamma == TREE_DEPTH
    assert f"tree of {choice.nodes} nodes" in choice_reason(choice) and choice.tree_limit is None
    flat = tree_profile([0.2] * 32, tree_c=0.4, name="flat")
    choice = choose([flat], CPU32)
    assert not choice.tree and choice.nodes == 0
    limit = choice.tree_limit if not choice.target_only else choice.options[0].tree
    assert limit is not None and limit.kind == "tree" and limit.nodes >= 1 and "does not pay" in limit_text(limit)
    assert choose([good], CPU32, tree=False).nodes == 0  # --tree off
    assert option_for(flat, CPU32, tree=True).nodes >= 1  # --tree on


def test_tree_size_follows_live_rounds_at_a_fixed_size():
    from app.engine.policy import TreeSize

    p = tree_profile([0.3 * k for k in range(1, 9)], tree_c=0.2)
    live = TreeSize(p, CPU32, nodes=6)
    assert live.gamma() == TREE_DEPTH and live.predicted == pytest.approx(speedup(p, TREE_DEPTH, CPU32, nodes=6))
    base = dict(gamma=TREE_DEPTH, drafted=3, emitted=4, bonus=True, overlap=(), draft_time=0.01,
                verify_time=CPU32.v(7) * CPU32.step, tree_tokens=(1,) * 6, tree_parents=(-1, 0, 1, 2, 3, 4))
    before = live.predicted
    assert live.tokens_per_round == pytest.approx(1 + 1.8)  # the measured E[accepted] of 6 nodes, and the target's token
    for i in range(1, 30):
        live.observe(RoundEvent(round=i, accepted=3, **base))  # 3 accepted a round beats the measured 1.8
    assert live.predicted > before and live.gamma() == TREE_DEPTH and live.rounds == 29
    assert 3.8 < live.tokens_per_round < 4.0  # moving towards the live 3 accepted + 1


def test_recheck_switches_on_a_slow_measured_answer_long_enough_to_judge():
    from app.engine.policy import MEASURED_FLOOR, MEASURED_TOKENS, recheck

    auto = AutoGamma(profile(0.05, 0.5), CPU)
    assert recheck(auto, MEASURED_FLOOR - 0.01, MEASURED_TOKENS - 1) is None  # mostly prefill
    assert recheck(auto, MEASURED_FLOOR + 0.01, 100) is None  # within the noise band
    assert recheck(auto, None, 100) is None  # untimed, and no live rounds yet
    switch = recheck(auto, 0.7, MEASURED_TOKENS)
    assert (switch.kind, switch.speedup, switch.label) == ("measured", 0.7, "d")


def test_recheck_switches_once_live_rounds_predict_a_slowdown():
    from app.engine.policy import RECHECK_ROUNDS, recheck

    auto = AutoGamma(profile(0.05, 0.5), CPU)
    for i in range(1, RECHECK_ROUNDS):  # every draft rejected and costly, but too few rounds yet
        g = auto.gamma()
        auto.observe(_round(i, g, 0, [0.02] * g, 0.05 * g, CPU.v(g + 1) * CPU.step))
    assert auto.predicted < 1.0 and recheck(auto, None, 0) is None
    auto.observe(_round(RECHECK_ROUNDS, auto.gamma(), 0, [0.02] * auto.gamma(), 0.05 * auto.gamma(),
                        CPU.seconds[auto.gamma()]))
    switch = recheck(auto, None, 0)
    assert switch.kind == "predicted" and switch.speedup == auto.predicted
    assert switch.alpha1 == pytest.approx(auto.profile.alpha_at(1)) and switch.c == pytest.approx(auto.profile.c)


def test_recheck_keeps_a_draft_the_live_rounds_predict_faster():
    from app.engine.policy import RECHECK_ROUNDS, recheck

    auto = AutoGamma(profile(0.02, 0.9), CPU)
    for i in range(1, RECHECK_ROUNDS + 5):
        g = auto.gamma()
        auto.observe(_round(i, g, g, [0.95] * g, 0.001 * g, CPU.v(g + 1) * CPU.step))
    assert auto.predicted > 1.0 and recheck(auto, None, 0) is None


def test_measured_predictions_use_the_policy_formula():
    # stats.predicted_speedup (the plots, the server's usage) against the paper's closed form, written out
    # here, and its values worked by hand: (1 - α^(γ+1)) / ((1 - α)(γc + v)).
    for (alpha, gamma, c, v), by_hand in (((0.5, 2, 0.1, 1.0), 1.75 / 1.2), ((0.8, 4, 0.2, 1.45), 3.3616 / 2.25),
                                          ((0.3, 7, 0.05, 1.8), 1.42847770 / 2.15)):
        closed = (1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * c + v))
        assert closed == pytest.approx(by_hand, rel=1e-7)
        assert predicted_speedup(alpha, gamma, c, v) == pytest.approx(closed, rel=1e-12)
        verify = VerifyCosts((1.0,) * gamma + (v,))
        assert speedup(profile(c, alpha), gamma, verify) == pytest.approx(closed, rel=1e-12)  # the load-time one


def test_a_round_is_priced_at_its_own_context():
    """v(n) timed after 64 and 335 tokens: a pass's extra rows weigh more in a short chat, where one step is
    cheaper. A 60-token round is priced at the 64-token curve, a 200-token one between the two; the planted
    twin (the reference curve everywhere) calls a 2-row pass 1.0 steps where the short chat pays 1.3."""
    from app.engine.gated_lookup import GatedLookupDrafter, worth_proposing

    long = (0.010, 0.0101, 0.0115, 0.013)  # after 335 tokens
    short = (0.007, 0.0091, 0.0105, 0.012)  # after 64: the same rows cost the same seconds, one step less
    costs = VerifyCosts(long, by_context=((64, short),), context=335)
    assert costs.at(60).v(2) == pytest.approx(0.0091 / 0.007)
    assert costs.at(1000) is costs and costs.at(335) is costs
    mid = costs.at(200)
    assert costs.at(60).v(2) > mid.v(2) > costs.v(2)
    gate = GatedLookupDrafter(costs, 0.2)
    assert worth_proposing(1, 0.2, costs.at(60)) == 0 and worth_proposing(1, 0.2, costs) == 1  # the twin
    assert gate.propose([7, 3, 9, 7], 1) == []  # a 1-token match at 4 tokens of context: not worth a row
    assert GatedLookupDrafter(VerifyCosts(long), 0.2).propose([7, 3, 9, 7], 1) == [3]


def test_a_rounds_own_work_counts_where_a_proposal_is_verified():
    """VerifyCosts.round: the work a round adds beyond its pass when it verifies a proposal, in v(n) for n > 1
    (chains past the table and trees too), never in the one-row step, and kept at another context."""
    v = VerifyCosts((0.010, 0.011, 0.012), by_context=((5, (0.008, 0.009, 0.010)),), context=10, round=0.002)
    assert v.v(1) == 1.0 and v.v(2) == pytest.approx(1.3) and v.v(3) == pytest.approx(1.4)
    assert v.v(4) == pytest.approx(1.5) and v.v_tree(3) == pytest.approx(1.4)
    shorter = v.at(5)
    assert shorter.round == 0.002 and shorter.v(2) == pytest.approx((0.009 + 0.002) / 0.008)
