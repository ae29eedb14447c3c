"""A native draft over a token subset S: a NativeCausalLM whose head QMatrix holds only S's rows
(app/native/model.py with_head_rows). On every kernel build this CPU runs: its logits are the full head's
logits of S bit for bit, and greedy speculation equals native target-only token for token. On the active
build: the joint law of the first 3 tokens is the native target's, and a residual that leaves out the
tokens outside S is caught.
"""

from __future__ import annotations

import pytest
import torch
from tiny_models import noisy_copy, tiny_model

from app.engine import DecodeParams, ModelDrafter, acceptance, generate
from app.native import active_build, builds
from engine.helpers import sampled_joint
from engine.test_native_joint import PARAMS, PLANTED_SAMPLES, PROMPT, SAMPLES, VOCAB, native_joint, pvalues
from engine.test_vocab_subset import P_CAUGHT, P_MIN, SUBSET, residual_inside

pytestmark = [pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here"),
              pytest.mark.usefixtures("one_thread")]

EVEN = torch.tensor([1, *range(0, 34, 2)]).sort().values  # the tiny pair's stop token 1 and the even tokens



def subset_drafter(draft, ids: torch.Tensor) -> ModelDrafter:
    from app.native.model import with_head_rows

    return ModelDrafter(with_head_rows(draft, ids), name="native subset draft", vocab_ids=ids)


@pytest.fixture(scope="module", params=builds(), ids=[b.isa() for b in builds()])
def tiny_native(request):
    from app.native.model import from_transformers

    target = tiny_model()
    draft = noisy_copy(target, 1.5)
    return from_transformers(target, build=request.param), from_transformers(draft, build=request.param)


def test_the_subset_head_gives_the_full_heads_logits_of_the_subset(tiny_native):
    from app.native.model import with_head_rows

    _, draft = tiny_native
    cut = with_head_rows(draft, EVEN)
    assert cut.cache_backend.weights.head.rows == len(EVEN)
    ids = torch.tensor([0, 5, 9, 3, 17, 33])  # 33: a token outside S is still read in
    full = draft.cache_backend.forward(draft.cache_backend.new_cache(), ids, keep=3)
    part = cut.cache_backend.forward(cut.cache_backend.new_cache(), ids, keep=3)
    assert part.shape == (3, len(EVEN))
    assert torch.equal(part, full[:, EVEN])


def test_native_subset_greedy_equals_native_target_only(tiny_native):
    target, draft = tiny_native
    prompt = torch.tensor([0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9])

    def run(drafter, gamma):
        params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=40, seed=0)
        return generate(target, prompt, drafter, params, vocab_size=34).token_ids

    expected = run(None, 1)
    assert set(expected) - set(EVEN.tolist())  # the target leaves S: corrections outside it happen
    drafter = subset_drafter(draft, EVEN)
    for gamma in (1, 2, 4):
        assert run(drafter, gamma) == expected, gamma


@pytest.fixture(scope="module")
def native_pair():
    from app.native.model import from_transformers

    target = tiny_model(vocab_size=VOCAB, layers=1, seed=0, scale=4.0)
    return from_transformers(target), from_transformers(noisy_copy(target, 1.5))


@pytest.fixture(scope="module")
def exact(native_pair):
    return native_joint(native_pair[0], PROMPT, PARAMS)


def test_native_subset_rounds_match_the_native_joint(native_pair, exact):
    target, draft = native_pair
    found = pvalues(sampled_joint(target, subset_drafter(draft, SUBSET), PROMPT, PARAMS, VOCAB, SAMPLES), exact)
    print(f"native subset draft: chi-square p-values (1, 2, 3 tokens) {found}")
    assert min(found) > P_MIN / 3


def test_a_residual_without_the_tokens_outside_the_subset_is_caught_on_the_native_path(native_pair, exact,
                                                                                      monkeypatch):
    target, draft = native_pair
    monkeypatch.setattr(acceptance, "residual", residual_inside(SUBSET))
    found = pvalues(sampled_joint(target, subset_drafter(draft, SUBSET), PROMPT, PARAMS, VOCAB, PLANTED_SAMPLES),
                    exact)
    print(f"native subset draft, residual over S only: chi-square p-values {found}")
    assert min(found) < P_CAUGHT
