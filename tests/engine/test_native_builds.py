"""Exactness on every kernel build this CPU runs (AVX-512 VNNI, AVX2, generic C), each forced by name, with
the activation digits the embedded model loads with (one digit on o, down and the head, two elsewhere): a
chain, a tree and suffix decoding follow the native target's exact joint law, and greedy output equals the
same build's target-only greedy for every drafter. The law is enumerated from that build's own passes.
Planted twin on every build: suffix proposals whose q is reported at a tenth of its value.

The generic C build runs every function in its plain-C reference, and the AVX2 build the same references
but for a tile that gives their bits (csrc/dispatch.h): where AVX2 runs, the generic build is held to AVX2's
law, enumerated, and to its sampled rounds, seed for seed, instead of sampling its own thousand runs 30 times
slower: the same bits follow the same law. Where no AVX2 runs, the generic build samples its own."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_models import noisy_copy, tiny_model

from app.engine import DecodeParams, ModelDrafter, generate
from app.engine.policy import VerifyCosts
from app.engine.suffix_drafter import SuffixDrafter
from app.engine.suffix_index import SuffixIndex
from app.engine.tree_drafters import ModelTreeDrafter
from app.native import builds
from app.native.descriptor import TWO_DIGITS
from engine import test_tree_joint as joint
from engine.helpers import chi_square_p, sampled_joint
from engine.test_native_greedy import first_difference
from engine.test_native_tree_joint import native_exact_joint

BUILDS = builds()
pytestmark = pytest.mark.skipif(not BUILDS, reason="the native kernel is not built here")

VOCAB = joint.VOCAB
MIX = TWO_DIGITS.with_role("o", 1).with_role("down", 1).with_role("head", 1)  # the embedded model's choice
FLAT = VerifyCosts((1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4))
SAMPLES = 1000
PLANTED_SAMPLES = 600  # the misreported q gives p < 1e-6 at 600 on every build (measured)
SAME_BITS_SAMPLES = 40  # seeded runs a bit-identical build must reproduce round for round


def _native_pair(build):
    from app.native.model import from_transformers

    target = tiny_model(vocab_size=VOCAB, layers=1, seed=0, scale=4.0)
    draft = noisy_copy(target, 1.5)  # before converting: a native model's kernel module does not deep-copy
    native = from_transformers(target, build=build, digits=MIX)
    assert native.cache_backend.weights.build is build
    return native, from_transformers(draft, build=build, digits=MIX), native_exact_joint(native, joint.PROMPT, joint.PARAMS)


def _same_bits_as(build):
    """The AVX2 build where `build` is the generic one and AVX2 runs here (the same bits), else None."""
    avx2 = next((b for b in BUILDS if b.isa() == "AVX2"), None)
    return avx2 if build.isa() == "generic C" else None


@pytest.fixture(scope="module", params=BUILDS, ids=[b.isa() for b in BUILDS])
def pair(request):
    """The vocab-8 pair of the engine tests on one build, and the law of that build's target."""
    return _native_pair(request.param)


def _suffix(target) -> SuffixDrafter:
    """An index of the target's own sampled continuations of the prompt: what a corpus of its answers holds."""
    seqs = []
    for seed in range(8):
        params = DecodeParams(temperature=0.8, max_new_tokens=6, seed=seed)
        seqs.append([*joint.PROMPT, *generate(target, torch.tensor(joint.PROMPT), None, params, vocab_size=VOCAB).token_ids])
    return SuffixDrafter(FLAT, 0.5, SuffixIndex(seqs))


def _drafters(target, draft) -> dict:
    return {"chain": ModelDrafter(draft), "tree": ModelTreeDrafter(draft, budget=8, depth=3, top_k=3),
            "suffix": _suffix(target)}


@pytest.mark.parametrize("kind", ["chain", "tree", "suffix"])
def test_every_build_follows_its_exact_joint(pair, kind):
    target, draft, exact = pair
    if (twin := _same_bits_as(target.cache_backend.weights.build)) is not None:
        other, other_draft, other_exact = _native_pair(twin)
        assert np.array_equal(exact, other_exact), "the generic build's law differs from AVX2's"
        mine = sampled_joint(target, _drafters(target, draft)[kind], joint.PROMPT, joint.PARAMS, VOCAB, SAME_BITS_SAMPLES)
        theirs = sampled_joint(other, _drafters(other, other_draft)[kind], joint.PROMPT, joint.PARAMS, VOCAB,
                               SAME_BITS_SAMPLES)
        assert np.array_equal(mine, theirs), "the generic build's rounds differ from AVX2's, seed for seed"
        return  # AVX2's own case samples the law these rounds reproduce
    counts = sampled_joint(target, _drafters(target, draft)[kind], joint.PROMPT, joint.PARAMS, VOCAB, SAMPLES)
    found = chi_square_p(counts, exact)
    print(f"{target.cache_backend.weights.build.isa()} {kind}: chi-square p {found:.3g}")
    assert found > 1e-3


def test_every_build_catches_a_misreported_suffix_q(pair, monkeypatch):
    target, _, exact = pair
    if _same_bits_as(target.cache_backend.weights.build) is not None:
        pytest.skip("the generic build is held to AVX2's bits, whose twin is caught in its own case")
    drafter = _suffix(target)
    honest = drafter.draft

    def misreported(*args):
        tokens, q = honest(*args)
        return tokens, q * 0.1

    monkeypatch.setattr(drafter, "draft", misreported)
    found = chi_square_p(sampled_joint(target, drafter, joint.PROMPT, joint.PARAMS, VOCAB, PLANTED_SAMPLES), exact)
    print(f"{target.cache_backend.weights.build.isa()} misreported suffix q: chi-square p {found:.3g}")
    assert found < 1e-6


def test_every_build_greedy_equals_its_target_only(pair):
    """The noisy draft is rejected almost always at T 0; the target as its own draft is accepted whole, so
    multi-row verification and the bonus row are exercised on every build too."""
    target, draft, _ = pair
    params = DecodeParams(gamma=3, temperature=0, max_new_tokens=24, seed=0)
    prompt = torch.tensor(joint.PROMPT)
    expected = generate(target, prompt, None, params, vocab_size=VOCAB).token_ids
    drafters = {**_drafters(target, draft), "chain, the target as draft": ModelDrafter(target),
                "tree, the target as draft": ModelTreeDrafter(target, budget=8, depth=3, top_k=3)}
    for name, drafter in drafters.items():
        got = generate(target, prompt, drafter, params, vocab_size=VOCAB)
        assert first_difference(got.token_ids, expected) is None, name
        if "target as draft" in name or name == "suffix":
            assert sum(r.accepted for r in got.rounds) > 0, name  # the drafter was heard, not skipped
