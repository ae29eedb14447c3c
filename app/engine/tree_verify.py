"""One target pass over a whole token tree, and compacting the KV cache to the accepted path.

The pass feeds the uncached committed tokens (at least the root, the last committed token) and then
the n nodes, with tree.tree_mask and explicit positions (past_len + depth), so each node attends to
the committed context and its own ancestors only: its logits are those of a plain forward over its
path. The cache then holds every node at slot past_len + i; `compact` moves the accepted nodes to
slots past_len, past_len + 1, ... and drops the rest. A node of depth d sat at position past_len + d,
which is the slot it moves to, so its rotary phase is already right. On static caches (static_tree.py)
the pass is StaticModel.tree over `static_tree_inputs`, padded to a fixed size, and `compact_static`
does the same move by index copy.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache, PreTrainedModel

from .kv import cache_argument, rollback
from .sampling import DecodeParams, fit_vocab, logits_to_probs
from .static_kv import StaticKV
from .tree import Tree, ancestry, tree_mask, tree_positions

# Attention kernels that take an arbitrary additive 4D mask as it is (flash-attention-2 and flex don't).
MASKED_ATTENTION = {"sdpa", "eager", "speclens_rows"}  # the last: app.models.attention, each row in shapes of its own under the mask


def tree_support(model: PreTrainedModel) -> str | None:
    """None when a tree pass over this model is exact, else a one-line reason."""
    config = model.config.get_text_config()
    implementation = getattr(config, "_attn_implementation", None) or "eager"
    if implementation not in MASKED_ATTENTION:
        return f"token trees need sdpa or eager attention, not {implementation}"
    if getattr(config, "use_sliding_window", False) or any(
        t != "full_attention" for t in (getattr(config, "layer_types", None) or ())
    ):
        return "token trees do not support sliding-window attention"
    return None


@torch.inference_mode()
def tree_forward(model, cache, fresh: torch.Tensor, tree: Tree, past_len: int, trunk: bool = False) -> torch.Tensor:
    """Feed fresh [m] (the last m of past_len committed tokens, m >= 1) then the tree's n nodes.

    Returns logits [1 + n, V_model] for the root (the last fresh token) and every node, or with
    trunk=True the decoder's final-norm hidden states [m + n, H] of every fed position.
    """
    m = len(fresh)
    device = fresh.device
    tokens = torch.cat([fresh, torch.tensor(tree.tokens, dtype=fresh.dtype, device=device)])
    positions = tree_positions(tree, past_len, fresh=m, device=device)  # [m + n]
    dtype = next(model.parameters()).dtype
    mask = tree_mask(tree, past_len, fresh=m, dtype=dtype, device=device)  # [1, 1, m + n, past_len + n]
    body = model.base_model if trunk else model
    kwargs = {} if trunk else {"logits_to_keep": len(tree) + 1}
    out = body(
        input_ids=tokens.view(1, -1), attention_mask=mask, position_ids=positions.view(1, -1), use_cache=True,
        **{cache_argument(type(body)): cache}, **kwargs,
    )
    return out.last_hidden_state[0] if trunk else out.logits[0]


def verify_tree(target: PreTrainedModel, cache: DynamicCache, ids: torch.Tensor, tree: Tree, params: DecodeParams,
                vocab_size: int) -> torch.Tensor:
    """ids [L] the committed context -> p [n + 1, V]: row 0 at the root, row 1 + i after node i.

    Temperature, top-k and top-p act on each row alone, so every node's p is shaped by its own path.
    """
    past_len = len(ids)
    fresh = ids[cache.get_seq_length() :]
    logits = fit_vocab(tree_forward(target, cache, fresh, tree, past_len), vocab_size)
    return logits_to_probs(logits, params)


@torch.inference_mode()
def compact(cache: DynamicCache, past_len: int, path) -> None:
    """Keep the past_len committed positions, then the accepted nodes `path` (node indices) in order."""
    k = len(path)
    if k:
        device = cache.layers[0].keys.device
        src = past_len + torch.as_tensor(list(path), dtype=torch.long, device=device)  # node i sat at past_len + i
        for layer in cache.layers:
            layer.keys[..., past_len : past_len + k, :] = layer.keys.index_select(-2, src)
            layer.values[..., past_len : past_len + k, :] = layer.values.index_select(-2, src)
    rollback(cache, past_len + k)


def static_tree_inputs(tree: Tree, past_len: int, size: int, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions [size] and the block [size, size] bool of a static pass (StaticModel.tree) that feeds the
    root (the newest committed token, at slot and position past_len - 1), then the n nodes (node i at slot
    past_len + i, position past_len + depth), then padding up to `size`.

    A node's row sees the root, its ancestors and itself; the root's row itself. A padding row sees itself
    (and, as every row, the committed slots) and no real row sees it: its keys are written but never read
    until a real token overwrites the slot. Built on the host, copied without waiting.
    """
    n = len(tree)
    if n + 1 > size:
        raise ValueError(f"a tree of {n} nodes does not fit a pass of {size} tokens")
    pos = past_len - 1 + torch.arange(size)  # the root's, and padding at its own slot's position
    pos[1 : n + 1] = past_len + torch.tensor(tree.depth, dtype=torch.long)
    block = torch.eye(size, dtype=torch.bool)
    block[1 : n + 1, 0] = True
    block[1 : n + 1, 1 : n + 1] = ancestry(tree)
    return pos.to(device, non_blocking=True), block.to(device, non_blocking=True)


@torch.inference_mode()
def compact_static(cache: StaticKV, past_len: int, path) -> None:
    """`compact` for static buffers: an index copy of the accepted nodes into slots past_len..; the
    slots after them are stale and stay masked until a real token overwrites them."""
    if not len(path):
        return
    device = cache.layers[0].keys.device
    src = past_len + torch.as_tensor(list(path), dtype=torch.long, device=device)
    dst = torch.arange(past_len, past_len + len(path), device=device)
    for layer in cache.layers:
        layer.keys.index_copy_(2, dst, layer.keys.index_select(2, src))
        layer.values.index_copy_(2, dst, layer.values.index_select(2, src))
