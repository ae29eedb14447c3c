"""The feature draft on the native kernel (app/native/draft.py): its linears as Q8_0 blocks.

Speculative output must still follow the target's law (the draft's q is whatever these linears give, and
acceptance must read that q), and greedy output must equal target-only greedy, chain and tree, on a native
target. A planted misreport of q on this path must be caught.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from app.engine import DecodeParams, generate
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_tree import FeatureTreeDrafter
from app.native import active_build
from engine.feature_helpers import random_feature_draft
from engine.helpers import PROMPTS, chi_square_p, exact_joint, sampled_joint

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")

VOCAB = 8


def native_drafter(target, vocab_k: int, source=None, **kw) -> FeatureDrafter:
    """A random feature draft initialised from `source` (transformers' model of the target: a native target
    has no layers to copy), on the native kernel beside `target`."""
    from app.native.draft import native_feature_drafter

    return native_feature_drafter(FeatureDrafter(random_feature_draft(source or target, vocab_k, **kw), target))


def test_native_linear_is_the_q8_0_product():
    """The product with the Q8_0 weights (padding cut, bias added, any leading shape), near the float one."""
    from app.native.draft import NativeLinear

    gen = torch.Generator().manual_seed(0)
    linear = nn.Linear(64, 40, bias=True)  # 40 rows: padded to 48 inside the kernel
    with torch.no_grad():
        linear.weight.copy_(torch.randn(40, 64, generator=gen) * 0.1)
        linear.bias.copy_(torch.randn(40, generator=gen))
    x = torch.randn(2, 3, 64, generator=gen)
    native = NativeLinear(linear)
    got = native(x)
    blocks = x @ native.mat.dequantize()[:40].T + linear.bias  # the Q8_0 weights in float32
    assert got.shape == blocks.shape == (2, 3, 40)
    scale = blocks.abs().max().item()
    err_blocks, err_float = (got - blocks).abs().max().item(), (got - linear(x)).abs().max().item()
    print(f"largest error: {err_blocks / scale:.1e} against the blocks' product, {err_float / scale:.1e} against float32")
    assert err_blocks < 1e-3 * scale  # only the activations' two-digit rounding
    assert 0 < err_float < 2e-2 * scale  # the weights really are the blocks


def test_native_draft_keeps_the_joint_law(vocab8_pair):
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.8, top_p=0.95)
    drafter = native_drafter(target, vocab_k=6)
    counts = sampled_joint(target, drafter, [3], params, VOCAB, samples=2500)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB))
    print(f"native feature draft: chi-square p-value {pvalue:.4g}")
    assert pvalue > 1e-3


def test_a_misreported_q_on_the_native_draft_is_caught(vocab8_pair, monkeypatch):
    """Planted: the native draft samples under the temperature but reports a flat q over its subset."""
    target, _ = vocab8_pair
    params = DecodeParams(gamma=3, temperature=0.4)
    drafter = native_drafter(target, vocab_k=6)
    honest = drafter.draft

    def misreport(ids, ids_list, gamma, p, vocab_size):
        tokens, q = honest(ids, ids_list, gamma, p, vocab_size)
        flat = torch.zeros_like(q)
        flat[:, :6] = 1.0 / 6  # what a path that forgot the transform and the ranking might report
        return tokens, flat

    monkeypatch.setattr(drafter, "draft", misreport)
    counts = sampled_joint(target, drafter, [3], params, VOCAB, samples=1500, depth=2)
    pvalue = chi_square_p(counts, exact_joint(target, [3], params, VOCAB, depth=2))
    print(f"misreported q: chi-square p-value {pvalue:.4g}")
    assert pvalue < 1e-6


@pytest.fixture(scope="module")
def native_pair():
    from tiny_models import tiny_model

    from app.native.model import from_transformers

    model = tiny_model()
    return model, from_transformers(model)


@pytest.mark.parametrize("prompt", PROMPTS, ids=["plain", "repetitive"])
def test_native_draft_greedy_equals_native_target_only(native_pair, prompt):
    source, target = native_pair
    prompt = torch.tensor(prompt)
    params = DecodeParams(temperature=0, max_new_tokens=32, seed=0)
    expected = generate(target, prompt, None, params, vocab_size=34, stop_token_ids=(1,)).token_ids
    chain = native_drafter(target, vocab_k=24, source=source, noise=0.1)
    tree = FeatureTreeDrafter(native_drafter(target, vocab_k=24, source=source, noise=0.1), budget=8, depth=4, top_k=3)
    accepted = 0
    for drafter in (chain, tree):
        for gamma in (2, 4):
            result = generate(target, prompt, drafter, DecodeParams(gamma=gamma, temperature=0, max_new_tokens=32, seed=0),
                              vocab_size=34, stop_token_ids=(1,))
            assert result.token_ids == expected, (drafter.name, gamma)
            accepted += sum(r.accepted for r in result.rounds)
    assert accepted > 0  # the draft really proposed tokens the target kept
