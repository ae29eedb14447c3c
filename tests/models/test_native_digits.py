"""Activation digits (descriptor.Digits): every build's model with one digit in every role keeps each row
bit-identical whatever rows share its pass and whatever the thread count (greedy speculation's exactness
rests on it), stays near float32, and the load's choice (quality.choose_digits) keeps one digit only where a
role's measured sensitivity allows it. Planted twin: a model whose one-digit rounding is made much coarser
fails the gate and falls back to two digits."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from app.native import builds, quality
from app.native.backend import NativeBackend
from app.native.build import ModuleFloats, assemble, parts_of
from app.native.descriptor import TWO_DIGITS, Digits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "native"))
import odd_shapes  # noqa: E402

BUILDS = builds()
pytestmark = pytest.mark.skipif(not BUILDS, reason="the native kernel is not built here")


@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
@pytest.mark.parametrize("shape", ["narrow-attention", "group-8"])
def test_one_digit_rows_are_independent_of_their_pass(build, shape):
    model = odd_shapes.tiny_model(shape)
    native = NativeBackend(assemble(model.config, parts_of(model.config, ModuleFloats(model)), build, Digits.all(1)))
    odd_shapes.check_rows_and_threads(native, model.config.vocab_size)
    odd_shapes.check_tree_row_equals_chain(native, model.config.vocab_size)
    ids = torch.randint(0, model.config.vocab_size, (12,), generator=torch.Generator().manual_seed(1))
    with torch.inference_mode():
        ref = model(ids.view(1, -1)).logits[0]
    out = native.forward(native.new_cache(), ids, keep=len(ids))
    assert (out - ref).abs().max() < 0.1 * ref.abs().max()


def test_the_choice_reads_each_roles_sensitivity():
    from tiny_models import char_tokenizer, tiny_model

    model = tiny_model()
    parts = parts_of(model.config, ModuleFloats(model))
    chosen, found = quality.choose_digits(lambda d: NativeBackend(assemble(model.config, parts, digits=d)), model,
                                          char_tokenizer(), 34, budget=300)
    assert set(found) >= {"two", *Digits.ROLES}
    for role in Digits.ROLES:  # one digit exactly where its own added KL is small
        small = found[role].kl - found["two"].kl < quality.ROLE_SHARE * quality.GATE_KL
        assert (getattr(chosen.digits, role) == 1) == small or not chosen.passes or chosen.digits == TWO_DIGITS


def test_a_coarse_one_digit_variant_falls_back_to_two(monkeypatch):
    from tiny_models import char_tokenizer, noisy_copy, tiny_model

    model = tiny_model()
    parts = parts_of(model.config, ModuleFloats(model))
    noisy = parts_of(model.config, ModuleFloats(noisy_copy(model, 0.5)))  # planted: one digit as wrong as noise

    def make(d: Digits):
        return NativeBackend(assemble(model.config, parts if d == TWO_DIGITS else noisy, digits=d))

    chosen, found = quality.choose_digits(make, model, char_tokenizer(), 34, budget=300)
    assert chosen.digits == TWO_DIGITS and all(found[r].kl > found["two"].kl for r in Digits.ROLES)


def test_a_large_targets_digits_are_chosen_against_its_two_digit_pass():
    """Above REFERENCE_WEIGHTS (no float32 copy): the roles at one digit are held against the two-digit pass,
    which is the reference itself (KL 0), and each role's measure equals its measure against float32 less what two
    digits already differ by, within the gate's share. Planted twin: a coarse one-digit rounding falls back."""
    from tiny_models import char_tokenizer, noisy_copy, tiny_model

    model = tiny_model()
    parts = parts_of(model.config, ModuleFloats(model))

    def make(d: Digits):
        return NativeBackend(assemble(model.config, parts, digits=d))

    chosen, found = quality.choose_digits(make, model, char_tokenizer(), 34, budget=300,
                                          reference=quality.two_digit_reference(make))
    assert found["two"].kl == 0.0 and found["two"].agreement == 1.0 and set(found) >= {"two", *Digits.ROLES}
    assert chosen.against == quality.TWO_DIGITS_REFERENCE and quality.TWO_DIGITS_REFERENCE in chosen.describe()
    _, fp32 = quality.choose_digits(make, model, char_tokenizer(), 34, budget=300)
    for role in Digits.ROLES:  # two digits stand for float32: the roles' added KL is nearly the same either way
        assert abs(found[role].kl - (fp32[role].kl - fp32["two"].kl)) < quality.ROLE_SHARE * quality.GATE_KL
    noisy = parts_of(model.config, ModuleFloats(noisy_copy(model, 0.5)))  # planted: one digit as wrong as noise

    def coarse(d: Digits):
        return NativeBackend(assemble(model.config, parts if d == TWO_DIGITS else noisy, digits=d))

    chosen, _ = quality.choose_digits(coarse, model, char_tokenizer(), 34, budget=300,
                                      reference=quality.two_digit_reference(coarse))
    assert chosen.digits == TWO_DIGITS


@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
@pytest.mark.parametrize("digits", [Digits.all(1), TWO_DIGITS.with_role("head", 1)], ids=["one", "head one"])
def test_the_head_after_the_trunk_is_the_pass_s_own_head(build, digits):
    """A feature draft's verify runs the trunk, then the head; target-only runs the whole pass. Greedy output
    is equal only if those logits are bit for bit the same, so `head` must read the head's own activation
    digits (it once read two where the load had chosen one: the frozen selftest's greedy check differed at
    token 8). Planted twin: the head's matrix at two digits gives other logits."""
    model = odd_shapes.tiny_model("narrow-attention")
    native = NativeBackend(assemble(model.config, parts_of(model.config, ModuleFloats(model)), build, digits))
    ids = torch.randint(0, model.config.vocab_size, (9,), generator=torch.Generator().manual_seed(2))
    whole = native.forward(native.new_cache(), ids, keep=len(ids))
    hidden = native.trunk(native.new_cache(), ids)
    assert torch.equal(native.head(hidden), whole)
    w = native.weights
    planted = torch.empty(len(ids), w.head.n)
    build.matmul(w.head.native(build, 2), hidden.float().contiguous().numpy(), planted.numpy(), 1)
    assert not torch.equal(planted[:, : w.vocab], whole)
