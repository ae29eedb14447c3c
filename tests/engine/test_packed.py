"""The bf16 CPU path (oneDNN-packed linears, row-exact attention) keeps decoding exact.

A verify pass over n tokens must give each row bit for bit what a single step gives, or greedy
speculative output drifts from target-only greedy. Each check has a planted-bug twin: the stock
kernels (a bare packed kernel for one row, PyTorch's attention) are shown to be caught.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from app.drafting.trained_drafts import pack_feature_drafter
from app.engine import DecodeParams, ModelDrafter, PromptLookupDrafter, acceptance, generate
from app.engine.feature_drafter import FeatureDrafter
from app.engine.tree_drafters import ModelTreeDrafter
from app.machine import attention, torch_path
from app.machine.packed import PackedLinear, packed_linear, packing_supported
from app.machine.torch_path import LinearPath
from engine.feature_helpers import random_feature_draft
from engine.helpers import chi_square_p, exact_joint, sampled_joint

pytestmark = pytest.mark.skipif(not packing_supported(), reason="this CPU has no native bf16 (oneDNN)")

PACKED = LinearPath("bfloat16", packed=True, hint=8)
VOCAB = 8


def packed_copy(model):
    return torch_path.apply_path(copy.deepcopy(model), PACKED).eval()


def rows_match(fn, rows: torch.Tensor) -> bool:
    """fn over all rows at once equals fn row by row, bit for bit."""
    whole = fn(rows)
    return all(torch.equal(fn(rows[j : j + 1]), whole[j : j + 1]) for j in range(len(rows)))


def _weight_and_rows():
    """A 2048-input linear: there the bare one-row kernel differs in several rows of 33 (measured)."""
    gen = torch.Generator().manual_seed(1)
    return (torch.randn(1024, 2048, generator=gen) * 0.02).bfloat16(), torch.randn(17, 2048, generator=gen).bfloat16()


def test_packed_linear_rows_do_not_depend_on_the_pass():
    w, x = _weight_and_rows()
    for hint in (1, 16):
        packed = torch.ops.mkldnn._reorder_linear_weight(w, hint)
        assert all(rows_match(lambda r, p=packed: packed_linear(r, p), x[:n]) for n in (2, 5, 9, 17)), hint


def test_a_one_row_kernel_of_another_order_is_caught():
    """Planted bug: one row through a kernel that sums in another order (float32, then rounded to bf16), as a
    bare one-row oneDNN call does on some CPUs (here: the EPYC's) and not on others (a CI machine's)."""
    w, x = _weight_and_rows()
    packed = torch.ops.mkldnn._reorder_linear_weight(w, 16)

    def planted(rows):
        if len(rows) == 1:
            return F.linear(rows.float(), w.float()).bfloat16()
        return packed_linear(rows, packed)

    assert not all(rows_match(planted, x[:n]) for n in (2, 5, 9, 17))


SHAPES = ((0, 40), (37, 9), (505, 9), (1020, 17), (300, 5))  # (cached, new): prefill, across 512, verify

HEADS = ((9, 3), (4, 4))  # (query heads, key heads): the embedded model's GQA, and plain multi-head
HELD = (0, 37, 505, 511, 1020)  # keys already cached: across the 512 boundary (505 + 17 > 512)


def _qkv(heads, kv_heads, n, size, gen):
    q = torch.randn(1, heads, n, 64, generator=gen).bfloat16()
    k = torch.randn(1, kv_heads, size, 64, generator=gen).bfloat16()
    v = torch.randn(1, kv_heads, size, 64, generator=gen).bfloat16()
    return q, k, v


def _attention_rows_match(attend, held: int, n: int, gen, heads=(9, 3)) -> bool:
    """Every row of an n-row pass equals the single step at its position (one row, its keys only).

    The single step's block holds zeros beside the row, the pass's other rows: so this also checks that a
    row does not depend on the other rows of its block or its call."""
    q, k, v = _qkv(*heads, n, held + n, gen)
    whole = attend(q, k, v)
    return all(torch.equal(attend(q[:, :, i : i + 1], k[:, :, : held + i + 1], v[:, :, : held + i + 1]),
                           whole[:, :, i : i + 1]) for i in range(n))


def test_row_exact_attention_rows_do_not_depend_on_the_pass():
    gen = torch.Generator().manual_seed(0)
    bad = [(heads, held, n) for heads in HEADS for held in HELD for n in range(1, 18)
           if not _attention_rows_match(attention.row_exact_attention, held, n, gen, heads)]
    assert not bad


def test_a_prefill_equals_its_single_steps():
    """A 300-token prompt in one pass (many blocks, two key lengths) row for row, sampled."""
    gen = torch.Generator().manual_seed(2)
    q, k, v = _qkv(9, 3, 300, 300, gen)
    whole = attention.row_exact_attention(q, k, v)
    for i in (0, 1, 127, 128, 200, 299):
        single = attention.row_exact_attention(q[:, :, i : i + 1], k[:, :, : i + 1], v[:, :, : i + 1])
        assert torch.equal(single, whole[:, :, i : i + 1]), i


def test_stock_attention_is_caught():
    """Planted bug: PyTorch's SDPA as transformers calls it (causal mask, keys as they are)."""
    gen = torch.Generator().manual_seed(0)

    def stock(q, k, v):
        n, size = q.shape[2], k.shape[2]
        mask = torch.arange(size)[None, :] <= torch.arange(size - n, size)[:, None]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask.view(1, 1, n, size), enable_gqa=True)

    assert not all(_attention_rows_match(stock, held, n, gen) for held, n in SHAPES)


def test_keys_padded_by_the_pass_are_caught(monkeypatch):
    """Planted bug: every row of a pass meets the kernel with the pass's keys (masked past its own), so its
    call's shape depends on the pass, not on the row."""
    monkeypatch.setattr(attention, "_key_length", lambda count, size: size)
    monkeypatch.setattr(attention, "_last", (None, None, []))
    gen = torch.Generator().manual_seed(0)
    assert not all(_attention_rows_match(attention.row_exact_attention, held, n, gen) for held, n in SHAPES)


def test_packed_logits_agree_with_unpacked_within_bf16(vocab34_pair):
    target, _ = vocab34_pair
    packed = packed_copy(target)
    assert sum(isinstance(m, PackedLinear) for m in packed.modules()) == 2 * 7 + 1
    ids = torch.tensor([[5, 9, 12, 20, 3, 3, 8]])
    with torch.inference_mode():
        want = target(input_ids=ids).logits.float()
        got = packed(input_ids=ids).logits.float()
    scale = want.abs().max()
    assert (got - want).abs().max() <= 0.02 * scale  # bf16 keeps 8 bits: ~0.4% per rounding (measured 0.44%)
    # Planted bug: the square weights packed in the wrong layout (transposed) are far outside it (51%).
    for m in packed.modules():
        if isinstance(m, PackedLinear) and m.in_features == m.out_features:
            m.packed = torch.ops.mkldnn._reorder_linear_weight(m.packed.to_dense().T.contiguous(), PACKED.hint)
    with torch.inference_mode():
        broken = packed(input_ids=ids).logits.float()
    assert (broken - want).abs().max() > 0.02 * scale


def _greedy(model, prompt, drafter, gamma, n=24):
    params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=n, seed=0)
    return generate(model, prompt, drafter, params, stop_token_ids=(1,)).token_ids


def _packed_feature_drafter(target, vocab_k):
    draft = random_feature_draft(target, vocab_k).to(torch.bfloat16)
    return pack_feature_drafter(FeatureDrafter(draft, target), PACKED.hint)


def test_greedy_speculative_equals_target_only_on_the_packed_path(vocab34_pair):
    target, draft = (packed_copy(m) for m in vocab34_pair)
    drafters = (ModelDrafter(draft), PromptLookupDrafter(), _packed_feature_drafter(target, 34))
    for prompt in ([5, 9, 12], [20, 3, 3, 8, 14, 20, 3]):
        prompt = torch.tensor(prompt)
        expected = _greedy(target, prompt, None, 1)
        for drafter in drafters:
            for gamma in (2, 5):
                assert _greedy(target, prompt, drafter, gamma) == expected, (drafter.name, gamma)


def test_packed_joint_distribution(vocab8_pair):
    target, draft = (packed_copy(m) for m in vocab8_pair)
    params = DecodeParams(gamma=3, temperature=1.0)
    exact = exact_joint(target, [3], params, VOCAB)
    counts = sampled_joint(target, ModelDrafter(draft), [3], params, VOCAB, samples=2000)
    assert chi_square_p(counts, exact) > 1e-3


def test_packed_resampling_from_p_is_caught(vocab8_pair, monkeypatch):
    """Planted bug on the packed path: after a rejection draw from p instead of the residual."""
    target, draft = (packed_copy(m) for m in vocab8_pair)
    params = DecodeParams(gamma=3, temperature=1.0)
    exact = exact_joint(target, [3], params, VOCAB)
    monkeypatch.setattr(acceptance, "RESIDUAL_EPS", float("inf"))
    counts = sampled_joint(target, ModelDrafter(draft), [3], params, VOCAB, samples=1500)
    assert chi_square_p(counts, exact) < 1e-6


CHATS = ("Name three primary colours.", "Explain how a bicycle stays upright.", "Write a haiku about the sea.")


def _default_greedy(target, chat, drafter, gamma):
    prompt = target.encode_chat([{"role": "user", "content": chat}])
    params = DecodeParams(gamma=gamma, temperature=0, max_new_tokens=40, seed=0)
    return generate(target.model, prompt, drafter, params, vocab_size=target.vocab_size,
                    stop_token_ids=target.stop_token_ids).token_ids


@pytest.mark.slow
def test_default_model_greedy_on_its_cpu_path(torch_default_target):
    """The embedded model as loaded (bf16, packed on this CPU): lookup and the shipped feature draft."""
    from app.drafting.drafts import make_drafter

    target = torch_default_target
    drafters = (PromptLookupDrafter(), make_drafter("trained", target))
    for chat in CHATS:
        expected = _default_greedy(target, chat, None, 1)
        for drafter in drafters:
            assert _default_greedy(target, chat, drafter, 6) == expected, (chat, drafter.name)


@pytest.mark.slow
def test_default_model_on_stock_kernels_drifts(torch_default_target, monkeypatch):
    """Planted bug: the same bf16 model on the stock kernels (PyTorch's attention, one row straight into
    oneDNN) leaves target-only greedy within 40 tokens (measured here: tokens 16 and 24 of two chats)."""
    from app.machine import packed

    target = torch_default_target
    if target.model.config._attn_implementation != attention.NAME:
        pytest.skip("the embedded model runs in float32 on this CPU")
    drafter = PromptLookupDrafter()
    monkeypatch.setattr(packed, "packed_linear",
                        lambda x, w, b=None: torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], ""))
    target.model.set_attn_implementation("sdpa")
    try:
        drift = [_default_greedy(target, chat, drafter, 6) != _default_greedy(target, chat, None, 1) for chat in CHATS]
    finally:
        target.model.set_attn_implementation(attention.NAME)
    assert any(drift)


def test_static_caches_on_the_packed_path(vocab34_pair):
    """A static cache's keys are a fixed-length buffer with stale slots that its additive mask hides: row-exact
    attention reads each row's filled slots only, and greedy still equals target-only."""
    from app.engine.static import StaticDecoder

    target, draft = (packed_copy(m) for m in vocab34_pair)
    decoder = StaticDecoder(target)
    decoder.warm_up(ModelDrafter(draft), 4, lambda *_: None)
    prompt = torch.tensor([5, 9, 12, 20, 3, 3, 8])
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=24, seed=0)
    expected = generate(target, prompt, None, params, stop_token_ids=(1,)).token_ids
    got = generate(target, prompt, ModelDrafter(draft), params, stop_token_ids=(1,), static=decoder).token_ids
    assert got == expected


SMALL_TREE = (-1, -1, 0, 0, 2, 1)  # two roots, branches, a grandchild
WIDE_TREE = (-1, -1, -1, 0, 0, 1, 3, 3, 4, 6, 6, 2, 11, 9, 5, 12, 13)  # 17 nodes, 7 leaves, depth 5


def _tree_rows_match(attend, held: int, gen, parents=SMALL_TREE, heads=(9, 3)) -> bool:
    """A token tree's rows under its mask equal the single steps that hold their path after compaction."""
    n = len(parents)
    q, k, v = _qkv(*heads, n, held + n, gen)
    mask = torch.zeros(1, 1, n, held + n, dtype=torch.bool)
    mask[..., :held] = True
    paths = []
    for i, parent in enumerate(parents):
        path = (paths[parent] if parent >= 0 else []) + [i]
        paths.append(path)
        mask[0, 0, i, [held + j for j in path]] = True
    whole = attend(q, k, v, mask=mask)
    for i, path in enumerate(paths):
        index = torch.tensor(list(range(held)) + [held + j for j in path])
        single = attention.row_exact_attention(q[:, :, i : i + 1], k.index_select(2, index), v.index_select(2, index))
        if not torch.equal(single, whole[:, :, i : i + 1]):
            return False
    return True


TREE_CASES = [(held, parents, heads) for held in (0, 37, 505, 1020) for parents in (SMALL_TREE, WIDE_TREE)
              for heads in HEADS]


def test_row_exact_attention_under_a_tree_mask_equals_the_compacted_single_steps():
    gen = torch.Generator().manual_seed(0)
    assert all(_tree_rows_match(attention.row_exact_attention, held, gen, parents, heads)
               for held, parents, heads in TREE_CASES)


def test_a_static_buffer_and_an_additive_mask_give_the_same_rows():
    """A static cache's keys are a longer buffer with stale slots, its mask additive (0 / the dtype's
    minimum): each row still equals its single step on exactly its keys."""
    gen = torch.Generator().manual_seed(3)
    held, n, buffer = 40, 9, 1056
    q, k, v = _qkv(9, 3, n, buffer, gen)
    visible = torch.arange(buffer)[None, :] <= torch.arange(held, held + n)[:, None]
    mask = torch.where(visible, 0.0, torch.finfo(torch.bfloat16).min).bfloat16()[None, None]
    whole = attention.row_exact_attention(q, k, v, mask=mask)
    for i in range(n):
        single = attention.row_exact_attention(q[:, :, i : i + 1], k[:, :, : held + i + 1], v[:, :, : held + i + 1])
        assert torch.equal(single, whole[:, :, i : i + 1]), i


def test_stock_attention_under_a_tree_mask_is_caught():
    """Planted bug: the whole tree in one SDPA call under its mask (what transformers' sdpa does)."""
    gen = torch.Generator().manual_seed(0)

    def stock(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

    assert not all(_tree_rows_match(stock, held, gen) for held in (0, 37, 505, 1020))


def test_tree_rows_left_uncompacted_are_caught(monkeypatch):
    """Planted bug: tree rows read the keys where they lie (the prefix, then every node, masked but for the
    row's ancestors) instead of gathered into their path's layout: the visible keys sit elsewhere in the
    kernel's blocks than in the single step, and its sums round differently."""
    monkeypatch.setattr(attention, "_lanes", lambda seen: {None: list(range(len(seen)))})
    monkeypatch.setattr(attention, "_last", (None, None, []))
    gen = torch.Generator().manual_seed(0)
    assert not all(_tree_rows_match(attention.row_exact_attention, held, gen, parents, heads)
                   for held, parents, heads in TREE_CASES)


def test_a_lane_leaking_a_siblings_key_is_caught(monkeypatch):
    """Planted mask bug (issue #27): each tree row also sees its next sibling's key, in its own lane. A
    leaked key is attended to, so the row is no longer its path's single step."""
    honest = attention._seen

    def leaky(mask, size):
        seen = honest(mask, size).clone()
        counts = seen.sum(1)
        prefix = (seen == (torch.arange(size)[None, :] < counts[:, None])).all(1)
        for r in (~prefix).nonzero().squeeze(1).tolist():
            last = int(seen[r].nonzero().max())
            if last + 1 < size:
                seen[r, last + 1] = True  # the next node: a sibling or a cousin, never an ancestor
        return seen

    monkeypatch.setattr(attention, "_seen", leaky)
    monkeypatch.setattr(attention, "_last", (None, None, []))
    gen = torch.Generator().manual_seed(0)
    assert not all(_tree_rows_match(attention.row_exact_attention, held, gen, parents, heads)
                   for held, parents, heads in TREE_CASES)


def test_greedy_trees_equal_target_only_on_the_packed_path(vocab34_pair):
    """Trees on the bf16 CPU path: greedy tree rounds (row-exact attention under the tree mask, then
    compaction) give target-only greedy token for token."""
    target, draft = (packed_copy(m) for m in vocab34_pair)
    prompt = torch.tensor([0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9])
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=40)
    expected = generate(target, prompt, None, params, vocab_size=34).token_ids
    result = generate(target, prompt, ModelTreeDrafter(draft, budget=8, depth=4, top_k=3), params, vocab_size=34)
    assert result.token_ids == expected
    assert any(r.tree_path and list(r.tree_path) != list(range(len(r.tree_path))) for r in result.rounds)  # a real move


def test_a_stale_compaction_on_the_packed_path_is_caught(vocab34_pair, monkeypatch):
    """Planted (issue #27): compaction crops to the right length but moves nothing, so a path that is not
    the first nodes leaves siblings' keys where the accepted ones belong; greedy output must drift."""
    from app.engine.kv import TransformersBackend

    target, draft = (packed_copy(m) for m in vocab34_pair)
    prompt = torch.tensor([0, 5, 9, 3, 17, 5, 9, 3, 22, 5, 9])
    params = DecodeParams(gamma=4, temperature=0, max_new_tokens=40)
    expected = generate(target, prompt, None, params, vocab_size=34).token_ids
    monkeypatch.setattr(TransformersBackend, "compact",
                        lambda self, cache, past_len, path: self.rollback(cache, past_len + len(path)))
    got = generate(target, prompt, ModelTreeDrafter(draft, budget=8, depth=4, top_k=3), params, vocab_size=34)
    assert got.token_ids != expected


def test_row_exact_attention_is_attention():
    """The rows are attention itself (within bf16 of float32 SDPA), causal and under a tree mask: the
    exactness checks above compare the function with itself."""
    gen = torch.Generator().manual_seed(4)
    for heads in HEADS:
        q, k, v = _qkv(*heads, 9, 530, gen)
        want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True,
                                              attn_mask=torch.ones(9, 530, dtype=torch.bool).tril(521))
        torch.testing.assert_close(attention.row_exact_attention(q, k, v).float(), want, atol=2e-2, rtol=0)
        mask = torch.ones(1, 1, 9, 530, dtype=torch.bool).tril(521)
        mask[0, 0, 5:, 522:525] = False  # rows 5.. skip three earlier nodes (a branch)
        want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, enable_gqa=True)
        torch.testing.assert_close(attention.row_exact_attention(q, k, v, mask=mask).float(), want, atol=2e-2, rtol=0)


def test_compiling_the_packed_path_is_refused_in_one_line_before_it_starts(vocab34_pair, monkeypatch):
    """Issue #28: inductor cannot lower a packed linear here (it wants the packed weight as a frozen constant),
    so --compile on the bf16 CPU path is refused with a reason before any compiling, never a traceback."""
    from app.engine import Unsupported
    from app.engine.static import StaticDecoder

    target, draft = vocab34_pair
    packed = packed_copy(target)
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiling started"))
    with pytest.raises(Unsupported) as refused:
        StaticDecoder(packed, compile=True)
    assert "oneDNN-packed" in str(refused.value) and "\n" not in str(refused.value)
    plain = StaticDecoder(target, compile=True, backend="eager")
    reason = plain.supports(ModelDrafter(packed_copy(draft)))  # a packed draft model under an fp32 target
    assert reason is not None and "oneDNN-packed" in reason and "the draft" in reason
    assert plain.supports(ModelDrafter(draft)) is None and StaticDecoder(packed).supports(None) is None
