"""End to end: the first 3 emitted tokens follow the target's exact joint distribution.

The exact law is enumerated over all 8^3 continuations with cache-free forward passes; the sampler
runs the real loop (draft model or prompt lookup, KV caches, rollback) once per sample.
A stale KV cache is caught by test_cache.py: in this loop it breaks the shapes before the statistics.
"""

from __future__ import annotations

import pytest

from app.engine import DecodeParams, ModelDrafter, PromptLookupDrafter, acceptance
from engine.helpers import chi_square_p, exact_joint, sampled_joint

VOCAB = 8
P_MIN = 1e-3  # seeded runs; honest p-values are printed (pytest -rP)
P_CAUGHT = 1e-6  # planted bugs must be rejected far beyond chance
# 6,000 runs a law (~12 a continuation, tails pooled by chi_square_p): the planted bug below is rejected at
# p < 1e-6 from a third of that. 10,000 cost 40% more of the suite's time for no bug any test here plants.
SAMPLES = 6_000

CASES = {  # gamma 3 unmasked at T 1 (all of a round's paths: rejection at each position, a bonus after three), and
    # each gamma under a temperature and a mask (gamma 1: a bonus inside the 3-token window)
    "gamma3-T1": DecodeParams(gamma=3, temperature=1.0),
    "gamma1-T0.6-top-p0.9": DecodeParams(gamma=1, temperature=0.6, top_p=0.9),
    "gamma3-T0.6-top-k5": DecodeParams(gamma=3, temperature=0.6, top_k=5),
}


@pytest.mark.parametrize("case", list(CASES))
def test_model_drafter_matches_exact_joint(vocab8_pair, case):
    target, draft = vocab8_pair
    params = CASES[case]
    counts = sampled_joint(target, ModelDrafter(draft), [3], params, VOCAB, samples=SAMPLES)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"{case}: chi-square p-value {pvalue:.4g}")
    assert pvalue > P_MIN


def test_prompt_lookup_matches_exact_joint(vocab8_pair):
    """The prompt repeats its last token, so lookup drafts from the first round on (one-hot q)."""
    target, _ = vocab8_pair
    params = DecodeParams(gamma=1, temperature=0.6, top_p=0.9)
    prompt = [3, 5, 2, 3]
    counts = sampled_joint(target, PromptLookupDrafter(), prompt, params, VOCAB, samples=SAMPLES)
    pvalue = chi_square_p(counts, exact_joint(target, prompt, params, VOCAB))
    print(f"prompt lookup: chi-square p-value {pvalue:.4g}")
    assert pvalue > P_MIN


def test_resampling_from_p_is_caught(vocab8_pair, monkeypatch):
    """Planted bug: after a rejection draw from p instead of the residual."""
    target, draft = vocab8_pair
    params = CASES["gamma3-T1"]
    monkeypatch.setattr(acceptance, "RESIDUAL_EPS", float("inf"))  # every residual "vanishes": p
    counts = sampled_joint(target, ModelDrafter(draft), [3], params, VOCAB, samples=2000)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"resample-from-p bug: chi-square p-value {pvalue:.4g}")
    assert pvalue < P_CAUGHT

