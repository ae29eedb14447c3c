"""The feature draft's tree: greedy tree rounds equal target-only greedy, and the draft's state after every
round equals a fresh recompute from the committed tokens' target features (the accepted path's only)."""

from __future__ import annotations

import pytest
import torch

from app.engine import DecodeParams, generate, runner
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_tree import FeatureTreeDrafter
from app.engine.kv import new_cache, trunk
from app.engine.tree_drafters import LookupTreeDrafter, UnionTreeDrafter
from engine.feature_helpers import random_feature_draft
from engine.helpers import PROMPTS, reference


def feature_tree(target, **kw) -> FeatureTreeDrafter:
    return FeatureTreeDrafter(FeatureDrafter(random_feature_draft(target, vocab_k=24, noise=0.1), target), **kw)


@pytest.mark.parametrize("union", [False, True], ids=["feature", "feature+lookup"])
@pytest.mark.parametrize("prompt", PROMPTS, ids=["plain", "repetitive"])
def test_greedy_feature_tree_equals_target_greedy(vocab34_pair, prompt, union):
    target, _ = vocab34_pair
    drafter = feature_tree(target, budget=8, depth=4, top_k=3)
    if union:
        drafter = UnionTreeDrafter(drafter, LookupTreeDrafter(budget=4))
    result = generate(target, torch.tensor(prompt), drafter, DecodeParams(gamma=4, temperature=0, max_new_tokens=24),
                      stop_token_ids=(1,))
    assert result.token_ids == reference(target, torch.tensor(prompt), 24, stop=1)
    assert sum(r.accepted for r in result.rounds) > 0


def state_faults(target, rounds_wanted: int = 12) -> tuple[list[str], int]:
    """Replay a sampled run: before each round, a fresh drafter given the committed tokens' features in
    one go must draft the live drafter's tree (tokens, parents and scores)."""
    model = random_feature_draft(target, vocab_k=24, noise=0.1)
    seen = []

    class Watched(FeatureTreeDrafter):
        def draft_tree(self, ids, ids_list, depth, params, vocab_size):
            tree = super().draft_tree(ids, ids_list, depth, params, vocab_size)
            seen.append((list(ids_list), depth, params, tree))
            return tree

    live = Watched(FeatureDrafter(model, target), budget=8, depth=3, top_k=3)
    params = DecodeParams(gamma=3, temperature=1.0, max_new_tokens=3 * rounds_wanted, seed=4)
    result = generate(target, torch.tensor([5, 9, 12, 7, 3]), live, params)
    faults = []
    for ids_list, depth, params, tree in seen[1:]:  # round 0 has no features yet
        fresh = FeatureTreeDrafter(FeatureDrafter(model, target), budget=8, depth=3, top_k=3)
        fresh.begin()
        ids = torch.tensor(ids_list)
        features = trunk(target, new_cache(target), ids[:-1])  # [N - 1, H]
        fresh.commit(len(features), features, 0)
        again = fresh.draft_tree(ids, ids_list, depth, params, 34)
        if again.tokens != tree.tokens or again.parents != tree.parents or not torch.allclose(
                torch.tensor(again.scores), torch.tensor(tree.scores), atol=1e-4):
            faults.append(f"round at {len(ids_list)} tokens: {tree} != {again}")
    off_chain = sum(1 for r in result.rounds if r.tree_path and r.tree_path != tuple(range(len(r.tree_path))))
    return faults, off_chain


def test_feature_tree_state_equals_a_fresh_recompute(vocab34_pair):
    faults, off_chain = state_faults(vocab34_pair[0])
    assert not faults, faults
    assert off_chain > 0  # some accepted paths left node order: a wrong row choice would show


def test_features_of_the_first_nodes_instead_of_the_path_are_caught(vocab34_pair, monkeypatch):
    """Planted bug: commit the first k node rows of the tree pass instead of the accepted path's rows."""
    monkeypatch.setattr(runner, "kept_features", lambda hidden, m, path: hidden[: m + len(path)])
    faults, _ = state_faults(vocab34_pair[0])
    assert faults


def test_trained_feature_tree_on_the_embedded_model(default_target):
    """The shipped trained draft's tree, and its union with the lookup trie: greedy equals target-only greedy."""
    from app.drafting.drafts import make_drafter

    target = default_target
    prompt = target.encode_chat([{"role": "user", "content": "Name three primary colours, then repeat them."}])
    stop = target.stop_token_ids[0]
    expected = reference(target.model, prompt, 32, stop)
    feature = FeatureTreeDrafter(make_drafter("trained", target), budget=12, depth=5, top_k=4)
    for drafter in (feature, UnionTreeDrafter(feature, LookupTreeDrafter(budget=4))):
        result = generate(target.model, prompt, drafter, DecodeParams(gamma=5, temperature=0, max_new_tokens=32),
                          stop_token_ids=(stop,), vocab_size=target.vocab_size)
        assert result.token_ids == expected, drafter.name
        assert sum(r.accepted for r in result.rounds) > 0
