"""One target pass over a whole token tree: its inputs on either cache, and the pass as a function of a model.

The pass feeds the uncached committed tokens (at least the root, the last committed token) and then
the n nodes, at explicit positions (past_len + depth) under tree.tree_visible, so each node attends to
the committed context and its own ancestors only: its logits are those of a plain forward over its
path. The cache then holds every node at slot past_len + i; the backend's `compact` moves the accepted
nodes to slots past_len, past_len + 1, ... and drops the rest. A node of depth d sat at position
past_len + d, which is the slot it moves to, so its rotary phase is already right. On static caches
the pass is StaticModel.tree over `static_tree_inputs`, padded to a fixed size, and StaticModel.compact
does the same move by index copy.
"""

from __future__ import annotations

from typing import Any

import torch

from .kv import backend_for
from .protocols import CacheBackend
from .tree import Tree, ancestry, tree_positions, tree_visible


def tree_support(model: Any) -> str | None:
    """None when a tree pass over this model is exact, else a one-line reason."""
    return backend_for(model).tree_support()


def tree_pass(backend: CacheBackend, cache: Any, fresh: torch.Tensor, tree: Tree, past_len: int,
              trunk: bool = False) -> torch.Tensor:
    """Feed fresh [m] (the last m of past_len committed tokens, m >= 1) then the tree's n nodes.

    Returns logits [1 + n, V_model] for the root (the last fresh token) and every node, or with
    trunk=True the decoder's final-norm hidden states [m + n, H] of every fed position.
    """
    m = len(fresh)
    device = fresh.device
    tokens = torch.cat([fresh, torch.tensor(tree.tokens, dtype=fresh.dtype, device=device)])
    positions = tree_positions(tree, past_len, fresh=m, device=device)  # [m + n]
    visible = tree_visible(tree, past_len, fresh=m, device=device)  # [m + n, past_len + n]
    return backend.tree_forward(cache, tokens, positions, visible, None if trunk else len(tree) + 1)


def tree_forward(model: Any, cache: Any, fresh: torch.Tensor, tree: Tree, past_len: int,
                 trunk: bool = False) -> torch.Tensor:
    """`tree_pass` through the model's backend."""
    return tree_pass(backend_for(model), cache, fresh, tree, past_len, trunk)


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
