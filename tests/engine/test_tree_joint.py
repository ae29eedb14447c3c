"""End to end through tree rounds: the first 3 emitted tokens follow the target's exact joint law.

The real pieces run once per sample through decode() and the tree rounds (runner.Runner with proposals.TREE): a tree drafted
(prompt-lookup trie, draft-model expansion, their union), one target pass with the 4D mask, the
one-hot rule, KV compaction, the next round. The exact
law over all 8^3 continuations comes from cache-free forward passes (helpers.exact_joint).
"""

from __future__ import annotations

import numpy as np
import pytest

from app.engine import DecodeParams, tree_accept
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_tree import FeatureTreeDrafter
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter
from engine.feature_helpers import random_feature_draft
from engine.helpers import chi_square_p, exact_joint, sampled_joint

VOCAB = 8
P_MIN = 1e-3  # seeded runs; honest p-values are printed (pytest -rP)
P_CAUGHT = 1e-6  # planted bugs must be rejected far beyond chance
PROMPT = [3, 5, 2, 3, 6, 1, 3]  # the last token recurs twice: the lookup trie branches at its root
PARAMS = DecodeParams(gamma=3, temperature=1.0, top_k=6, top_p=0.9)
SAMPLES = 2000  # per drafter
FEATURE_SAMPLES = 1000  # the feature draft's tree (its target pass runs trunk, then head)
PLANTED_SAMPLES = 600  # enough for p < 1e-17 on the planted bugs (measured: 1e-18 .. 1e-37)


def drafter(kind: str, target, draft):
    if kind == "lookup":
        return LookupTreeDrafter(budget=6, depth=3)
    if kind.startswith("feature"):  # a reduced head of 6 of the 8 tokens: 2 are never proposed
        feature = FeatureTreeDrafter(FeatureDrafter(random_feature_draft(target, vocab_k=6), target),
                                     budget=6, depth=3, top_k=3)
        return feature if kind == "feature" else UnionTreeDrafter(feature, LookupTreeDrafter(budget=4, depth=3))
    model = ModelTreeDrafter(draft, budget=6, depth=3, top_k=3)
    return model if kind == "model" else UnionTreeDrafter(LookupTreeDrafter(budget=4, depth=3), model)


def tree_joint(target, tree_drafter, samples: int) -> np.ndarray:
    return sampled_joint(target, tree_drafter, PROMPT, PARAMS, VOCAB, samples)


def pvalues(counts: np.ndarray, exact: np.ndarray) -> list[float]:
    """Chi-square p-values of the first token, the first two and all three: at a few hundred samples the
    joint's 512 cells are mostly pooled, and a bug at the root shows far sooner in the marginals."""
    return [chi_square_p(counts.reshape(VOCAB**k, -1).sum(1), exact.reshape(VOCAB**k, -1).sum(1)) for k in (1, 2, 3)]


@pytest.fixture(scope="module")
def exact(vocab8_pair):
    return exact_joint(vocab8_pair[0], PROMPT, PARAMS, VOCAB)


@pytest.mark.parametrize("kind", ["lookup", "model", "union", "feature", "feature+lookup"])
def test_tree_rounds_match_exact_joint(vocab8_pair, exact, kind):
    target, draft = vocab8_pair
    samples = FEATURE_SAMPLES if kind.startswith("feature") else SAMPLES
    found = pvalues(tree_joint(target, drafter(kind, target, draft), samples), exact)
    print(f"{kind} tree: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) > P_MIN / 3


@pytest.mark.parametrize("bug", ["no-renormalisation", "corrected-from-full-p"])
def test_planted_tree_bugs_are_caught(vocab8_pair, exact, monkeypatch, bug):
    target, draft = vocab8_pair
    if bug == "no-renormalisation":
        monkeypatch.setattr(tree_accept, "sibling_mass", lambda total, earlier, p_eff: total)
    else:
        monkeypatch.setattr(tree_accept, "stop_distribution", lambda p_row, kid_tokens, kid: p_row)
    found = pvalues(tree_joint(target, drafter("union", target, draft), PLANTED_SAMPLES), exact)
    print(f"{bug}: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) < P_CAUGHT
