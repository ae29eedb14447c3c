"""The tree pass: its logits are each path's own, the 4D mask reaches attention as it is, and a cache
compacted to the accepted path (dynamic or static) gives the next logits a fresh prefill gives."""

from __future__ import annotations

import pytest
import torch
from tiny_models import tiny_model
from transformers import masking_utils

from app.engine import kv, tree_verify
from app.engine.kv import backend_for, forward, new_cache
from app.engine.static_kv import StaticModel
from app.engine.tree import ROOT, make_tree, tree_mask
from app.engine.tree_verify import static_tree_inputs, tree_forward

ATOL = 1e-5  # fp32: only the summation order differs from a plain forward
PROMPT = [0, 5, 9, 3, 17, 3, 22]
# depth 3, three branches at the root, repeated tokens across branches and one inside a path
TREE = make_tree([3, 8, 3, 12, 5, 5, 9, 3], [ROOT, ROOT, 0, 0, ROOT, 2, 3, 4])


@pytest.fixture(scope="module", params=["sdpa", "eager"])
def target(request):
    model = tiny_model()
    model.set_attn_implementation(request.param)
    return model


@torch.inference_mode()
def plain_logits(model, ids: list[int]) -> torch.Tensor:
    """Cache-free logits [V] after ids: the reference."""
    return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]


def tree_logits(model, prompt, tree, cached: int) -> tuple[torch.Tensor, object]:
    cache = new_cache(model)
    forward(model, cache, torch.tensor(prompt[:cached]), keep=1)
    return tree_forward(model, cache, torch.tensor(prompt[cached:]), tree, len(prompt)), cache


def path_references(model, prompt, tree) -> torch.Tensor:
    return torch.stack([plain_logits(model, prompt + tree.path_tokens(node)) for node in [ROOT, *range(len(tree))]])


@pytest.mark.parametrize("cached", [len(PROMPT) - 1, 3])  # the root alone fresh, or a longer catch-up
def test_tree_pass_equals_each_path(target, cached):
    logits, cache = tree_logits(target, PROMPT, TREE, cached)
    torch.testing.assert_close(logits, path_references(target, PROMPT, TREE), atol=ATOL, rtol=0)
    assert cache.get_seq_length() == len(PROMPT) + len(TREE)


@pytest.mark.parametrize("leak", ["causal", "one-zero"])
def test_planted_mask_errors_are_caught(target, monkeypatch, leak):
    """Planted: a causal mask (siblings see each other), or a 1/0 float mask (the classic mistake: added
    to the scores it hides nothing). The per-path comparison must fail."""
    honest = kv.additive

    def causal(tree, past_len, fresh=0, device=None):
        rows, cols = fresh + len(tree), past_len + len(tree)
        return torch.ones(rows, cols, dtype=torch.bool, device=device).tril(cols - rows)

    if leak == "causal":
        monkeypatch.setattr(tree_verify, "tree_visible", causal)
    else:
        monkeypatch.setattr(kv, "additive", lambda visible, dtype: (honest(visible, dtype) == 0).to(dtype))
    logits, _ = tree_logits(target, PROMPT, TREE, len(PROMPT) - 1)
    assert (logits - path_references(target, PROMPT, TREE)).abs().max() > 1e-3


def test_masking_utils_pass_a_4d_mask_through(target):
    """transformers' own mask builder returns our 4D mask unchanged for this attention implementation."""
    mask = tree_mask(TREE, len(PROMPT), fresh=1)
    embeds = torch.zeros(1, 1 + len(TREE), target.config.hidden_size)
    built = masking_utils.create_causal_mask(
        config=target.config, inputs_embeds=embeds, attention_mask=mask, cache=new_cache(target),
        position_ids=torch.arange(1 + len(TREE))[None],
    )
    assert built is mask


@pytest.mark.parametrize("path", [[], [0], [0, 3, 6], [4, 7]])
def test_compacted_cache_continues_like_a_prefill(target, path):
    """After compaction the cache is the committed prompt plus the accepted path: the next token's
    logits equal a fresh prefill's (a stale node, a wrong slot or a wrong rotary phase would not)."""
    _, cache = tree_logits(target, PROMPT, TREE, len(PROMPT) - 1)
    backend_for(target).compact(cache, len(PROMPT), path)
    accepted = [TREE.tokens[i] for i in path]
    assert cache.get_seq_length() == len(PROMPT) + len(path)
    nxt = 7
    logits = forward(target, cache, torch.tensor([nxt]), keep=1)[-1]
    torch.testing.assert_close(logits, plain_logits(target, PROMPT + accepted + [nxt]), atol=ATOL, rtol=0)


def test_compaction_without_the_copy_is_caught(target, monkeypatch):
    """Planted: crop to the right length but keep the nodes in tree order (no gather)."""
    _, cache = tree_logits(target, PROMPT, TREE, len(PROMPT) - 1)
    monkeypatch.setattr(torch.Tensor, "index_select", lambda self, dim, index: self.narrow(dim, int(index[0]), len(index)))
    backend_for(target).compact(cache, len(PROMPT), [4, 7])
    monkeypatch.undo()
    logits = forward(target, cache, torch.tensor([7]), keep=1)[-1]
    assert (logits - plain_logits(target, PROMPT + [5, 3, 7])).abs().max() > 1e-3


def static_tree_pass(target, tree, size: int, leak: bool = False):
    """A StaticModel holding the prompt but its last token, after one padded tree pass (padding garbage
    left in the buffers first: a stale earlier round's keys). -> (sm, logits [1 + n, V])."""
    sm = StaticModel(target, capacity=64, min_capacity=64)
    sm.prefill(torch.tensor(PROMPT[:-1] + [30] * 12))  # slots after the prompt hold stale keys
    pos, block = static_tree_inputs(tree, len(PROMPT), size)
    if leak:
        block[:, len(tree) + 1 :] = True
    tokens = torch.tensor(PROMPT[-1:] + list(tree.tokens) + [31] * (size - len(tree) - 1))
    hidden = sm.tree(tokens, len(PROMPT) - 1, pos, block)
    with torch.inference_mode():
        return sm, sm.head(hidden[: len(tree) + 1])


@pytest.mark.parametrize("path", [[], [1], [0, 2, 5]])
def test_static_tree_pass_and_compaction(target, path):
    """The same on a StaticModel's preallocated buffers, padded to 16 rows: per-path logits, then after
    StaticModel.compact the next step's logits equal a fresh prefill's."""
    if target.config._attn_implementation != "sdpa":
        pytest.skip("the static cache is exercised once")
    sm, logits = static_tree_pass(target, TREE, 16)
    torch.testing.assert_close(logits, path_references(target, PROMPT, TREE), atol=ATOL, rtol=0)
    sm.compact(len(PROMPT), path)
    accepted = [TREE.tokens[i] for i in path]
    logits = sm.step(torch.tensor([7]), len(PROMPT) + len(path))
    torch.testing.assert_close(logits, plain_logits(target, PROMPT + accepted + [7]), atol=ATOL, rtol=0)


def test_static_padding_and_missing_copy_are_caught(target, monkeypatch):
    """Planted: real rows see the padding rows; or the static compaction skips its index copy."""
    if target.config._attn_implementation != "sdpa":
        pytest.skip("the static cache is exercised once")
    _, logits = static_tree_pass(target, TREE, 16, leak=True)
    assert (logits - path_references(target, PROMPT, TREE)).abs().max() > 1e-3
    sm, _ = static_tree_pass(target, TREE, 16)
    monkeypatch.setattr(torch.Tensor, "index_copy_", lambda self, dim, index, source: self)
    sm.compact(len(PROMPT), [4, 7])
    monkeypatch.undo()
    logits = sm.step(torch.tensor([7]), len(PROMPT) + 2)
    assert (logits - plain_logits(target, PROMPT + [5, 3, 7])).abs().max() > 1e-3


def test_embedded_model_tree_pass(torch_default_target):
    """The shipped model's architecture takes the same mask and positions (a tree of 6 over a chat prompt)."""
    model = torch_default_target.model
    assert tree_verify.tree_support(model) is None
    prompt = torch_default_target.encode_chat([{"role": "user", "content": "Name three colours."}]).tolist()
    top = plain_logits(model, prompt).topk(3).indices.tolist()
    tree = make_tree([top[0], top[1], top[2], 11, 13, 17], [ROOT, ROOT, ROOT, 0, 0, 3])
    logits, cache = tree_logits(model, prompt, tree, len(prompt) - 1)
    torch.testing.assert_close(logits, path_references(model, prompt, tree), atol=1e-4, rtol=0)
    backend_for(model).compact(cache, len(prompt), [0, 3, 5])
    logits = forward(model, cache, torch.tensor([19]), keep=1)[-1]
    torch.testing.assert_close(logits, plain_logits(model, prompt + [top[0], 11, 17, 19]), atol=1e-4, rtol=0)


def test_trunk_pass_gives_the_same_rows(target):
    """trunk=True (for a feature draft, which needs the accepted path's features): every fed row's
    features, whose head rows are the logits of the plain tree pass."""
    cache = new_cache(target)
    forward(target, cache, torch.tensor(PROMPT[:3]), keep=1)
    hidden = tree_forward(target, cache, torch.tensor(PROMPT[3:]), TREE, len(PROMPT), trunk=True)
    assert hidden.shape[0] == len(PROMPT) - 3 + len(TREE)
    with torch.inference_mode():
        logits = target.get_output_embeddings()(hidden[len(PROMPT) - 4 :])
    torch.testing.assert_close(logits, path_references(target, PROMPT, TREE), atol=ATOL, rtol=0)
