"""Prompt lookup decided per round: proposes only what verify costs make worth testing; exact either way."""

from __future__ import annotations

import pytest
import torch

from app.engine import DecodeParams, PromptLookupDrafter, generate
from app.engine.gated_lookup import GatedLookupDrafter, worth_proposing
from app.engine.policy import VerifyCosts
from engine.helpers import chi_square_p, exact_joint, sampled_joint

FLAT = VerifyCosts((1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4))  # prepacked bf16: rows nearly free
STEEP = VerifyCosts((1.0, 1.7, 2.1, 2.5, 2.9, 3.3, 3.7, 4.1, 4.5))  # fp32 MKL: rows re-read the weights


def test_the_proposal_length_follows_alpha_and_verify_cost():
    assert worth_proposing(8, 0.6, FLAT) > 1  # cheap rows: a long match pays
    assert worth_proposing(8, 0.6, STEEP) == 0  # E(k) = 1.6, 1.96, 2.18 for 1.7, 2.1, 2.5 steps: never pays
    assert worth_proposing(8, 0.02, FLAT) == 0  # a match that is almost never right costs 5%
    assert worth_proposing(0, 0.9, FLAT) == 0  # no match: a target-only round


def test_no_match_or_low_alpha_gives_target_only_rounds(vocab34_pair):
    target, _ = vocab34_pair
    prompt = torch.tensor([5, 9, 12, 20, 3, 3, 8, 14, 20, 3])
    params = DecodeParams(gamma=6, temperature=0, max_new_tokens=24, seed=0)
    plain = generate(target, prompt, PromptLookupDrafter(), params, stop_token_ids=(1,))
    assert any(r.drafted for r in plain.rounds)
    frozen = GatedLookupDrafter(STEEP, 0.6, weight=0.0)  # α never moves: its matches never pay
    gated = generate(target, prompt, frozen, params, stop_token_ids=(1,))
    assert not any(r.drafted for r in gated.rounds) and gated.token_ids == plain.token_ids


def test_matches_it_did_not_propose_teach_alpha(vocab34_pair):
    """Target-only rounds whose output followed the match raise α until proposing pays (on STEEP a
    proposal needs α above 0.7); a drafter that learnt from its own proposals only would never start."""
    target, _ = vocab34_pair
    prompt = torch.tensor([5, 9, 12, 20, 3, 3, 8, 14, 20, 3])
    params = DecodeParams(gamma=6, temperature=0, max_new_tokens=24, seed=0)
    drafter = GatedLookupDrafter(STEEP, 0.6)
    gated = generate(target, prompt, drafter, params, stop_token_ids=(1,))
    first = next(i for i, r in enumerate(gated.rounds) if r.drafted)
    assert first > 0 and not any(r.drafted for r in gated.rounds[:first])
    assert gated.token_ids == generate(target, prompt, None, params, stop_token_ids=(1,)).token_ids


def test_alpha_is_learned_from_the_rounds(vocab34_pair):
    target, _ = vocab34_pair
    prompt = torch.tensor([5, 9, 12, 20, 3, 3, 8, 14, 20, 3])
    params = DecodeParams(gamma=6, temperature=0, max_new_tokens=40, seed=0)
    drafter = GatedLookupDrafter(FLAT, 0.99)  # optimistic: it proposes, then learns from what was kept
    result = generate(target, prompt, drafter, params, stop_token_ids=(1,))
    tested = sum(min(r.drafted, r.accepted + 1) for r in result.rounds if r.drafted)
    accepted = sum(r.accepted for r in result.rounds)
    learned = min(a for row in drafter.by_length.values() for a in row)
    assert tested and learned < 0.99
    # Each rejection pulls the α of its match length and position down by 15%.
    assert (learned < 0.99 * 0.9) == (accepted < tested)


def test_greedy_equals_target_only(vocab34_pair):
    target, _ = vocab34_pair
    for prompt in ([5, 9, 12], [20, 3, 3, 8, 14, 20, 3]):
        prompt = torch.tensor(prompt)
        params = DecodeParams(gamma=6, temperature=0, max_new_tokens=32, seed=0)
        expected = generate(target, prompt, None, params, stop_token_ids=(1,)).token_ids
        for alpha in (0.3, 0.9):
            got = generate(target, prompt, GatedLookupDrafter(FLAT, alpha), params, stop_token_ids=(1,))
            assert got.token_ids == expected, alpha


def test_gated_lookup_matches_exact_joint(vocab8_pair):
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.6, top_p=0.9)
    prompt = [3, 5, 2, 3]
    counts = sampled_joint(target, GatedLookupDrafter(FLAT, 0.5), prompt, params, 8, samples=3000)
    assert chi_square_p(counts, exact_joint(target, prompt, params, 8)) > 1e-3


def test_gated_lookup_misreported_q_is_caught(vocab8_pair, monkeypatch):
    """Planted bug: the proposal reported at q = 0.1 instead of one-hot, so it is accepted too often."""
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.6, top_p=0.9)
    prompt = [3, 5, 2, 3]
    drafter = GatedLookupDrafter(FLAT, 0.5)
    honest = drafter.draft

    def misreported(*args):
        tokens, q = honest(*args)
        return tokens, q * 0.1

    monkeypatch.setattr(drafter, "draft", misreported)
    counts = sampled_joint(target, drafter, prompt, params, 8, samples=2000)
    assert chi_square_p(counts, exact_joint(target, prompt, params, 8)) < 1e-6


def test_positions_past_the_rounds_gamma_are_learned(vocab34_pair):
    """At γ 1 (what a low α asks for) α at match position 2 still learns from the round's second token,
    so a copy that goes on can make longer proposals pay; learning only up to γ would never move it."""
    target, _ = vocab34_pair
    drafter = GatedLookupDrafter(FLAT, 0.5)
    params = DecodeParams(gamma=1, temperature=0, max_new_tokens=32, seed=0)
    generate(target, torch.tensor([5, 9, 12, 20, 3, 3, 8, 14, 20, 3]), drafter, params, stop_token_ids=(1,))
    assert any(row[1] != 0.5 for row in drafter.by_length.values())


def test_alpha_is_kept_per_match_length():
    """A context whose three-token suffixes copy earlier text while its one-token matches do not: the
    drafter learns both, then proposes on a three-token match and not on a one-token one. With one α for
    all lengths (the planted twin) the one-token matches would drag it down and nothing would be proposed."""
    copied = list(range(10, 40))
    noise = [t for i in range(30) for t in (50, 60 + i)]  # 50 is always followed by something new
    text = copied + noise + copied
    drafter = GatedLookupDrafter(STEEP, 0.5)  # a proposal pays from α 0.7 up
    for i in range(len(copied) + 2, len(text)):
        drafter.propose(text[:i], 4)
    assert drafter.by_length[1][0] < 0.3 and drafter.by_length[3][0] > 0.9
    assert drafter.propose(text[:-3] + [50], 4) == []  # "50" alone: a one-token match
    copy = drafter.propose(copied[:12] + noise[:6] + copied[:5], 4)  # "12 13 14": a three-token match
    assert copy and copy == copied[5 : 5 + len(copy)]


def test_gamma_follows_the_gates_alpha_past_the_proposed_positions():
    """Per-round lookup's γ comes from the gate's α, which learns every position of a match. AutoGamma's own
    α learns only proposed positions: from γ 1, with α 0.95 at position 1 and the calibrated 0.25 beyond, it
    stays at γ 1 for good (the planted twin: AutoGamma's γ), and a copying answer verified one token a round."""
    from app.engine.policy import AutoGamma, DrafterProfile, GatedLookupGamma

    native = VerifyCosts((1.0, 1.07, 1.29, 1.48, 1.67, 1.95, 2.2, 2.45, 2.7))  # the embedded model's, 2 threads
    profile = DrafterProfile("prompt-lookup", "prompt lookup", 0.0, 0.25, (0.95, 0.25, 0.25, 0.25))
    drafter = GatedLookupDrafter(native, 0.25)
    for row in drafter.by_length.values():
        row[:] = [0.95] * len(row)  # a copy: every position agreed
    assert AutoGamma(profile, native).gamma() == 1
    assert GatedLookupGamma(drafter, profile, native).gamma() > 4
    # and auto's choice of per-round lookup is steered by it
    from app.drafting.auto import Calibration, Selection
    from app.engine.policy import Choice

    chosen = Selection(drafter, "prompt-lookup", Choice("prompt-lookup", 1, 1.07, "per round"),
                       Calibration(native, (profile,), True, 0.0, "CPU"))
    assert chosen.auto_gamma().gamma() > 4


def _round(i: int, drafted: int, verify_time: float):
    from app.engine import RoundEvent

    return RoundEvent(round=i, gamma=max(1, drafted), drafted=drafted, accepted=0, emitted=1, bonus=False,
                      overlap=(0.2,) * drafted, draft_time=0.0, verify_time=verify_time)


def test_the_gate_prices_proposals_at_the_chats_own_verify_cost(monkeypatch):
    """Calibrated at a long context, a 2-row pass cost 1.0 steps; in the chat it costs 1.3 (one-row rounds
    0.01 s, two-row 0.013 s). Per-round lookup then stops proposing 1-token matches at α 0.2, which pay only
    where a row is nearly free. The planted twin (the calibrated costs kept) goes on proposing them."""
    from app.engine.policy import DrafterProfile, GatedLookupGamma, live_verify

    calibrated = VerifyCosts((0.010, 0.010, 0.0115, 0.013, 0.0145))
    profile = DrafterProfile("prompt-lookup", "prompt lookup", 0.0, 0.2)

    def play(gate: GatedLookupDrafter) -> GatedLookupGamma:
        live = GatedLookupGamma(gate, profile, calibrated)
        for i in range(1, 60):
            live.observe(_round(i, i % 2, 0.010 if i % 2 == 0 else 0.013))
        return live

    gate = GatedLookupDrafter(calibrated, 0.2)
    assert worth_proposing(1, 0.2, gate.verify) == 1  # 1.2 tokens for 1.0 steps
    live = play(gate)
    assert gate.verify.v(2) == pytest.approx(1.3, abs=0.01) and live.verify is gate.verify
    assert gate.verify.v(4) == pytest.approx(calibrated.v(4) + 3 * 0.3, abs=0.03)  # 0.3 a row, row by row
    assert worth_proposing(1, 0.2, gate.verify) == 0
    monkeypatch.setattr(live_verify.LiveVerify, "observe", lambda self, rows, seconds, context=None: None)
    kept = GatedLookupDrafter(calibrated, 0.2)
    play(kept)
    assert worth_proposing(1, 0.2, kept.verify) == 1
