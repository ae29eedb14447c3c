"""Token trees on the native path (the CPU's default) follow the target's exact joint law: the first 3
emitted tokens of tree rounds, for every tree drafter, against the law of the same native model's own
single passes. The tree pass here is the kernel's masked pass over the cache and every node, and a
compaction an index copy (app/native/backend.py). Planted twins: a tree pass whose mask lets
siblings see each other, and a compaction that moves the keys but leaves the values.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from tiny_models import noisy_copy, tiny_model

from app.engine import logits_to_probs
from app.native import active_build
from engine import test_native_greedy as planted
from engine import test_tree_joint as joint
from engine.helpers import sampled_joint

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")

VOCAB = joint.VOCAB
DEPTH = 3


@pytest.fixture(scope="module")
def native_vocab8():
    """The vocab8 pair of conftest.py (same seeds), both on the native path."""
    from app.native.model import from_transformers

    target = tiny_model(vocab_size=VOCAB, layers=1, seed=0, scale=4.0)
    draft = noisy_copy(target, 1.5)  # before attaching: a native model's kernel module does not deep-copy
    return from_transformers(target), from_transformers(draft)


@torch.inference_mode()
def native_exact_joint(model, prompt: list[int], params) -> np.ndarray:
    """P(t1..t3 | prompt) over all 8^3 continuations from the native backend's own passes, one fresh
    cache per prefix (what target-only decoding computes at each position)."""
    from app.engine.kv import backend_for

    backend = backend_for(model)
    probs = torch.ones(1, dtype=torch.float64)
    prefixes: list[list[int]] = [[]]
    for _ in range(DEPTH):
        rows = []
        for pre in prefixes:
            cache = backend.new_cache()
            rows.append(backend.forward(cache, torch.tensor(prompt + pre), 1)[-1, :VOCAB])
        p = logits_to_probs(torch.stack(rows), params).double()
        probs = (probs[:, None] * p).reshape(-1)
        prefixes = [pre + [t] for pre in prefixes for t in range(VOCAB)]
    return probs.numpy()


@pytest.fixture(scope="module")
def exact(native_vocab8):
    return native_exact_joint(native_vocab8[0], joint.PROMPT, joint.PARAMS)


def _counts(target, tree_drafter, samples: int) -> np.ndarray:
    return sampled_joint(target, tree_drafter, joint.PROMPT, joint.PARAMS, VOCAB, samples)


def _drafter(kind: str, target, draft):
    """test_tree_joint's drafters; "feature, native draft": the feature tree with its linears on the kernel."""
    if kind != "feature, native draft":
        return joint.drafter(kind, target, draft)
    from app.native.draft import native_feature_drafter

    tree = joint.drafter("feature", target, draft)
    native_feature_drafter(tree.chain)
    return tree


@pytest.mark.parametrize("kind", ["lookup", "model", "union", "feature", "feature+lookup", "feature, native draft"])
def test_native_tree_rounds_match_the_exact_joint(native_vocab8, exact, kind):
    target, draft = native_vocab8
    samples = joint.FEATURE_SAMPLES if kind.startswith("feature") else joint.SAMPLES
    found = joint.pvalues(_counts(target, _drafter(kind, target, draft), samples), exact)
    print(f"{kind} tree on the native path: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) > joint.P_MIN / 3


@pytest.mark.parametrize("bug", ["siblings see each other", "compaction moves keys only"])
def test_planted_native_tree_bugs_are_caught(native_vocab8, exact, monkeypatch, bug):
    from app.native.backend import NativeBackend

    target, draft = native_vocab8
    if bug == "siblings see each other":
        monkeypatch.setattr(NativeBackend, "tree_forward", planted._leaking_tree_forward(NativeBackend.tree_forward))
    else:
        monkeypatch.setattr(NativeBackend, "compact", planted._keys_only_compact(NativeBackend.compact))
    found = joint.pvalues(_counts(target, joint.drafter("model", target, draft), joint.PLANTED_SAMPLES), exact)
    print(f"{bug}: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) < joint.P_CAUGHT


def test_the_exact_law_is_the_native_models_own(native_vocab8, exact):
    """The reference is the native model's, not transformers' float32 one (Q8_0 weights differ slightly),
    and it is a distribution over the 8^3 continuations."""
    from engine.helpers import exact_joint

    target, _ = native_vocab8
    assert exact.sum() == pytest.approx(1.0)
    float_law = exact_joint(copy.deepcopy(tiny_model(vocab_size=VOCAB, layers=1, seed=0, scale=4.0)), joint.PROMPT,
                            joint.PARAMS, VOCAB)
    assert not np.allclose(exact, float_law, rtol=0, atol=1e-9)
    assert np.abs(exact - float_law).max() < 0.05
