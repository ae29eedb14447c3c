"""The native path (app/native) end to end at T > 0: the first 3 emitted tokens follow the native
target's exact joint law, chain and tree, with a native draft model that differs from the target.

The native model is its own model (its activations are rounded to 8 bits), so the law is enumerated from
the native target's own logits (one fresh-cache pass per prefix; its rows are the same whatever rows share
a pass), not from transformers' float32. Planted twins on the native backend must be caught: the tree
pass's visibility dropped (rows causal in node order, so siblings leak), a compaction that moves the keys
but leaves the values, and the generic resample-from-p bug.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import noisy_copy, tiny_model

from app.engine import DecodeParams, ModelDrafter, PromptLookupDrafter, acceptance, logits_to_probs
from app.engine.tree_drafters import LookupTreeDrafter, ModelTreeDrafter, UnionTreeDrafter
from app.native import active_build
from engine.helpers import chi_square_p, sampled_joint

pytestmark = [pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here"),
              pytest.mark.usefixtures("one_thread")]

VOCAB = 8
P_MIN = 1e-3  # seeded runs; honest p-values are printed (pytest -rP)
P_CAUGHT = 1e-6  # planted bugs must be rejected far beyond chance
PROMPT = [3, 5, 2, 3, 6, 1, 3]  # the last token recurs: lookup proposes, its trie branches at the root
PARAMS = DecodeParams(gamma=3, temperature=1.0, top_k=6, top_p=0.9)
SAMPLES = 1000  # a chain sample costs ~3 ms on one thread of a busy 2-core machine, a tree sample ~5 ms
PLANTED_SAMPLES = 300  # the twins below give p = 0 (a zero-probability continuation) at 300 (measured)



@pytest.fixture(scope="module")
def native_pair():
    """The vocab-8 pair of the engine tests on the native path: target and a noisy draft, both native."""
    from app.native.model import from_transformers

    target = tiny_model(vocab_size=VOCAB, layers=1, seed=0, scale=4.0)
    draft = noisy_copy(target, 1.5)
    return from_transformers(target), from_transformers(draft)


@pytest.fixture(scope="module")
def float_target():
    """transformers' float32 model the native target was made from (the same seeds)."""
    return tiny_model(vocab_size=VOCAB, layers=1, seed=0, scale=4.0)


@torch.inference_mode()
def native_joint(model, prompt: list[int], params: DecodeParams, depth: int = 3) -> np.ndarray:
    """P(t1..t_depth | prompt) over all VOCAB^depth continuations from the native backend's own logits."""
    backend = model.cache_backend
    probs = torch.ones(1, dtype=torch.float64)
    prefixes: list[list[int]] = [[]]
    for _ in range(depth):
        logits = torch.cat([backend.forward(backend.new_cache(), torch.tensor(prompt + pre), keep=1)
                            for pre in prefixes])  # [prefixes, V]
        p = logits_to_probs(logits[:, :VOCAB], params).double()
        probs = (probs[:, None] * p).reshape(-1)
        prefixes = [pre + [t] for pre in prefixes for t in range(VOCAB)]
    return probs.numpy()


@pytest.fixture(scope="module")
def exact(native_pair):
    return native_joint(native_pair[0], PROMPT, PARAMS)


def pvalues(counts: np.ndarray, exact: np.ndarray) -> list[float]:
    """p-values of the first token, the first two and all three (a bug at the root shows in the marginals)."""
    return [chi_square_p(counts.reshape(VOCAB**k, -1).sum(1), exact.reshape(VOCAB**k, -1).sum(1)) for k in (1, 2, 3)]


def drafter(kind: str, draft):
    if kind == "model":
        return ModelDrafter(draft)
    if kind == "lookup":
        return PromptLookupDrafter()
    return UnionTreeDrafter(LookupTreeDrafter(budget=4, depth=3), ModelTreeDrafter(draft, budget=6, depth=3, top_k=3))


def test_the_native_law_is_the_native_targets_own(float_target, exact):
    """The reference is not transformers' float32 law, though close to it: the test below is about the
    native model, whose rounding moves the law by ~1e-4."""
    from engine.helpers import exact_joint

    fp32 = exact_joint(float_target, PROMPT, PARAMS, VOCAB)
    assert 0 < np.abs(exact - fp32).max() < 1e-2


@pytest.mark.parametrize("kind", ["model", "lookup", "union tree"])  # the union: lookup trie + model expansion
def test_native_rounds_match_the_native_joint(native_pair, exact, kind):
    target, draft = native_pair
    found = pvalues(sampled_joint(target, drafter(kind, draft), PROMPT, PARAMS, VOCAB, SAMPLES), exact)
    print(f"native {kind}: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) > P_MIN / 3


def _leaking_tree_forward(honest):
    def leaky(self, cache, ids, positions, visible, keep):
        n, held = len(ids), cache.length
        seen = visible.clone()
        seen[:, held:] = torch.ones(n, n, dtype=torch.bool).tril()  # causal in node order: earlier siblings leak
        return honest(self, cache, ids, positions, seen, keep)

    return leaky


def _keys_only_compact(honest):
    def keys_only(self, cache, past_len, path):
        values = cache.values.clone()
        honest(self, cache, past_len, path)
        cache.values.copy_(values)  # the accepted path's values stay where its siblings' were

    return keys_only


@pytest.mark.parametrize("bug", ["tree mask dropped", "compaction moves keys only"])
def test_planted_native_tree_bugs_are_caught(native_pair, exact, monkeypatch, bug):
    from app.native.backend import NativeBackend

    target, draft = native_pair
    if bug == "tree mask dropped":
        monkeypatch.setattr(NativeBackend, "tree_forward", _leaking_tree_forward(NativeBackend.tree_forward))
    else:
        monkeypatch.setattr(NativeBackend, "compact", _keys_only_compact(NativeBackend.compact))
    found = pvalues(sampled_joint(target, drafter("union tree", draft), PROMPT, PARAMS, VOCAB, PLANTED_SAMPLES), exact)
    print(f"{bug}: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) < P_CAUGHT


def test_resampling_from_p_is_caught_on_the_native_path(native_pair, exact, monkeypatch):
    """Planted: after a rejection draw from p instead of the residual (measured: p ~1e-31 at 600 samples)."""
    target, draft = native_pair
    monkeypatch.setattr(acceptance, "RESIDUAL_EPS", float("inf"))
    found = pvalues(sampled_joint(target, ModelDrafter(draft), PROMPT, PARAMS, VOCAB, 600), exact)
    print(f"resample-from-p: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) < P_CAUGHT
