"""The feature draft in the engine: greedy equality, the exact joint law with a reduced head, the round
law, and the draft's state after every round equal to a fresh recompute over the committed tokens."""

from __future__ import annotations

import pytest
import torch

from app.engine import DecodeParams, generate
from app.engine.feature_drafter import FeatureDrafter
from app.engine.kv import new_cache, trunk
from app.engine.runner import begin_runner
from app.engine.static import StaticDecoder
from engine.feature_helpers import feature_drafter, random_feature_draft
from engine.helpers import (
    GAMMAS,
    PROMPTS,
    chi_square_p,
    exact_joint,
    greedy,
    law_deviations,
    reference,
    sampled_joint,
)

VOCAB = 8
P_MIN = 1e-3
P_CAUGHT = 1e-6


@pytest.mark.parametrize("prompt", PROMPTS, ids=["plain", "repetitive"])
def test_greedy_equals_hf_generate(vocab34_pair, prompt):
    target, _ = vocab34_pair
    prompt = torch.tensor(prompt)
    expected = reference(target, prompt, 24, stop=1)
    drafter = feature_drafter(target, vocab_k=24, noise=0.1)
    for gamma in GAMMAS:
        assert greedy(target, prompt, drafter, gamma, 24, stop=1) == expected, gamma


def test_greedy_with_confidence_stop(vocab34_pair):
    """A confidence stop makes gamma a maximum; greedy output is unchanged."""
    target, _ = vocab34_pair
    prompt = torch.tensor(PROMPTS[0])
    drafter = feature_drafter(target, vocab_k=24, noise=0.1)
    drafter.min_confidence = 0.5
    result = generate(target, prompt, drafter, DecodeParams(gamma=6, temperature=0, max_new_tokens=24),
                      stop_token_ids=(1,))
    assert result.token_ids == reference(target, prompt, 24, stop=1)
    assert any(0 < r.drafted < r.gamma for r in result.rounds), "the stop never fired"


CASES = {
    "gamma1-T1": DecodeParams(gamma=1, temperature=1.0),
    "gamma3-T0.6-top-p0.9": DecodeParams(gamma=3, temperature=0.6, top_p=0.9),
}


@pytest.mark.parametrize("case", list(CASES))
def test_reduced_head_matches_exact_joint(vocab8_pair, case):
    """The head covers 6 of the 8 tokens: the residual must carry the other two."""
    target, _ = vocab8_pair
    params = CASES[case]
    drafter = feature_drafter(target, vocab_k=6)
    counts = sampled_joint(target, drafter, [3], params, VOCAB, samples=2500)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"{case}: chi-square p-value {pvalue:.4g}")
    assert pvalue > P_MIN


def test_misreported_q_is_caught(vocab8_pair, monkeypatch):
    """Planted bug: the draft samples under the temperature but reports q at T = 1."""
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.4)
    drafter = feature_drafter(target, vocab_k=6)
    honest = drafter.draft

    def misreport(ids, ids_list, gamma, p, vocab_size):
        tokens, q = honest(ids, ids_list, gamma, p, vocab_size)
        flat = torch.zeros_like(q)
        flat[:, :6] = 1.0 / 6  # what a draft that forgot the transform and the ranking might report
        return tokens, flat

    monkeypatch.setattr(drafter, "draft", misreport)
    counts = sampled_joint(target, drafter, [3], params, VOCAB, samples=1500, depth=2)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB, depth=2))
    print(f"misreported q: chi-square p-value {pvalue:.4g}")
    assert pvalue < P_CAUGHT


def test_accepted_counts_follow_the_law(vocab34_pair):
    target, _ = vocab34_pair
    drafter = feature_drafter(target, vocab_k=30, noise=0.05)
    rounds = []
    for seed in range(16):
        result = generate(target, torch.tensor([5, 9, 12]), drafter,
                          DecodeParams(gamma=4, temperature=1.0, max_new_tokens=40, seed=seed))
        for r in result.rounds[1:-1]:  # round 0 has no features yet; the last may be cut
            assert r.drafted == r.gamma and r.emitted == r.accepted + 1, r
        rounds += [r for r in result.rounds[:-1] if r.drafted]
    deviations = law_deviations(rounds)
    print("sigmas per n:", [round(d, 2) for d in deviations], "rounds:", len(rounds))
    assert all(abs(d) <= 6 for d in deviations)
    assert sum(r.bonus for r in rounds) > 0 and sum(r.accepted == 0 for r in rounds) > 0


class Recorder:
    """Forwards to a FeatureDrafter and keeps what its last draft() returned."""

    wants_features = True
    proposes = "chain"

    def __init__(self, inner: FeatureDrafter) -> None:
        self.inner, self.name, self.last = inner, inner.name, None

    def draft(self, *args):
        self.last = self.inner.draft(*args)
        return self.last

    def seed(self, seed):
        self.inner.seed(seed)

    def begin(self):
        self.inner.begin()

    def commit(self, kept, features, start):
        self.inner.commit(kept, features, start)

    def static_form(self):
        return self.inner.static_form()


def state_faults(target, model, rounds: int = 14) -> list[str]:
    """Each round, a fresh drafter fed the committed tokens' features in one go must draft exactly what
    the incremental drafter drafts (same q, same tokens from the same random state)."""
    params = DecodeParams(gamma=4, temperature=1.0)
    vocab = target.config.vocab_size
    drafter = Recorder(FeatureDrafter(model, target))
    drafter.seed(1)
    drafter.begin()
    ids_list = [5, 9, 12, 7, 3]
    runner = begin_runner(target, ids_list, drafter, torch.Generator().manual_seed(0), 0)
    faults, rejections, acceptances = [], 0, 0
    for r in range(rounds):
        ids = torch.tensor(ids_list)
        fresh = None
        if r > 0:
            fresh = FeatureDrafter(model, target)
            fresh.begin()
            features = trunk(target, new_cache(target), ids[:-1])  # [N - 1, H]
            fresh.commit(len(features), features, 0)
            fresh.generator.set_state(drafter.inner.generator.get_state())
            expected = fresh.draft(ids, ids_list, params.gamma, params, vocab)
        verdict = runner.step(ids_list, params.gamma, params, vocab).verdict
        drafted = list(verdict.drafts)
        if fresh is not None:
            got = drafter.last
            if got[0].tolist() != expected[0].tolist() or not torch.allclose(got[1], expected[1], atol=1e-5):
                faults.append(f"round {r}: the draft differs from a fresh recompute over the committed tokens")
                return faults
        n = verdict.n_accepted
        rejections += n < len(drafted)
        acceptances += n > 0
        ids_list = ids_list + drafted[:n] + [verdict.next_token]
    assert rejections >= 3 and acceptances >= 2, "the check needs rounds with rejections and acceptances"
    return faults


def test_state_equals_fresh_recompute(vocab34_pair):
    target, _ = vocab34_pair
    assert state_faults(target, random_feature_draft(target, 30, noise=0.05)) == []


def test_kept_speculative_entries_are_caught(vocab34_pair, monkeypatch):
    """Planted bug: commit keeps the accepted speculative entries (computed from the draft's own g) and
    queues only the features after them."""
    target, _ = vocab34_pair

    def keep_speculative(self, kept, features, start):
        self.cache.length = min(self.cache.length, kept)
        self.pending = torch.cat([self.pending, features[self.cache.length + len(self.pending) - start :]])

    monkeypatch.setattr(FeatureDrafter, "commit", keep_speculative)
    faults = state_faults(target, random_feature_draft(target, 30, noise=0.05))
    print(faults)
    assert faults


def test_round_zero_prefills_without_draft(vocab34_pair):
    target, _ = vocab34_pair
    result = generate(target, torch.tensor([5, 9, 12]), feature_drafter(target, 30),
                      DecodeParams(gamma=3, temperature=0, max_new_tokens=8))
    assert result.rounds[0].drafted == 0 and all(r.drafted > 0 for r in result.rounds[1:-1])


def test_feature_draft_needs_a_plain_head(vocab34_pair):
    target, _ = vocab34_pair
    drafter = feature_drafter(target, 30)
    target.config.final_logit_softcapping = 30.0
    try:
        with pytest.raises(ValueError, match="feature draft"):
            generate(target, torch.tensor([5, 9, 12]), drafter, DecodeParams(gamma=2, max_new_tokens=4))
    finally:
        del target.config.final_logit_softcapping


def test_static_caches_refuse_a_feature_draft(vocab34_pair):
    """A feature draft has no static form yet: asking for static caches is a one-line error, not ignored."""
    target, _ = vocab34_pair
    with pytest.raises(ValueError, match="static cache does not support the feature draft drafter"):
        generate(target, torch.tensor([5, 9, 12]), feature_drafter(target, 30), DecodeParams(gamma=2, max_new_tokens=4),
                 static=StaticDecoder(target, min_capacity=16))
