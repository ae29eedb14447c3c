"""Round structure: each round emits accepted + 1 tokens and n follows the accepted-count law.

Dropping the bonus token leaves the output distribution exact (the next round samples that position
again), so only the rounds can show it; see the testing note in the algorithm design.
"""

from __future__ import annotations

import dataclasses

import torch

from app.engine import DecodeParams, ModelDrafter, generate, proposals
from engine.helpers import law_deviations

GAMMA = 4
SIGMAS = 6


def run_rounds(target, draft, runs: int = 24):
    drafter = ModelDrafter(draft)
    rounds = []
    for seed in range(runs):
        result = generate(
            target, torch.tensor([5, 9, 12]), drafter,
            DecodeParams(gamma=GAMMA, temperature=1.0, max_new_tokens=40, seed=seed),
        )
        assert result.finished.reason == "length"
        # The last round may be cut by max_new_tokens; every earlier one is whole.
        for r in result.rounds[:-1]:
            assert r.drafted == r.gamma
            assert r.emitted == r.accepted + 1, r
            assert r.bonus == (r.accepted == r.drafted), r
        rounds += result.rounds
    return rounds


def test_accepted_counts_follow_the_law(vocab34_pair):
    rounds = run_rounds(*vocab34_pair)
    deviations = law_deviations(rounds)
    print("sigmas per n:", [round(d, 2) for d in deviations], "rounds:", len(rounds))
    assert all(abs(d) <= SIGMAS for d in deviations)
    assert sum(r.bonus for r in rounds) > 0


def test_dropped_bonus_is_caught(vocab34_pair, monkeypatch):
    """Planted bug: when every draft is accepted, end the round without sampling the bonus token."""
    honest = proposals.accept

    def no_bonus(p, q, x, generator, greedy=False, **kwargs):
        verdict = honest(p, q, x, generator, greedy, **kwargs)
        g = len(x)
        if g and verdict.n_accepted == g:  # emit x_g as the round's last token, and nothing after it
            return dataclasses.replace(verdict, n_accepted=g - 1, next_token=int(x[-1]))
        return verdict

    monkeypatch.setattr(proposals, "accept", no_bonus)
    deviations = law_deviations(run_rounds(*vocab34_pair))
    print("sigmas per n under the bug:", [round(d, 2) for d in deviations])
    assert max(abs(d) for d in deviations) > SIGMAS
