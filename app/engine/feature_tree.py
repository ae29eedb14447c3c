"""The feature draft's token tree: EAGLE-2's expansion over the draft's own layer, nodes fed with a tree mask.

A node of depth d is fed at draft position L - 1 + d (L committed tokens) with its token's embedding
and, as the feature, the draft's output g at its parent (g of the newest committed token for a child
of the root), exactly as chain drafting feeds g back; it attends to the committed positions and its
own ancestors only. The tree's cache entries are dropped after the expansion: the cache keeps
target-fed positions only, and `commit` hands over the target's features of the accepted path alone.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from torch import nn

from .feature_net import draft_tree_forward
from .protocols import Drafter
from .sampling import DecodeParams
from .tree import EMPTY, Tree, ancestry, make_tree
from .tree_draft import expand
from .tree_drafters import TreeLifecycle, draft_logprobs


class FeatureChain(Drafter, Protocol):
    """What the tree reads of the feature draft's chain (feature_drafter.FeatureDrafter, which makes this tree):
    named here, so the tree needs no import of the chain that imports it."""

    model: Any  # the draft's FeatureDraftModel
    cache: Any
    device: torch.device
    embed: nn.Module
    reduced_head: nn.Linear
    rotary: nn.Module

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None: ...

    def catch_up(self, ids: torch.Tensor, ids_list: list[int]) -> torch.Tensor | None: ...


class FeatureTreeDrafter(TreeLifecycle):
    """A FeatureDrafter's state (cache, pending features) drafting trees of `budget` nodes, `depth` levels."""

    wants_features = True

    chain: FeatureChain

    def __init__(self, drafter: FeatureChain, budget: int = 8, depth: int = 4, top_k: int = 4) -> None:
        self.chain = drafter
        self.name = f"{drafter.name} tree"
        self.budget, self.depth, self.top_k = budget, depth, top_k

    def begin(self) -> None:
        self.chain.begin()

    def commit(self, kept: int, features: torch.Tensor | None, start: int) -> None:
        self.chain.commit(kept, features, start)

    @torch.inference_mode()
    def draft_tree(self, ids, ids_list, depth: int, params: DecodeParams, vocab_size: int) -> Tree:
        d = self.chain
        g_root = d.catch_up(ids, ids_list)  # [1, H]
        depth = min(depth, self.depth)
        if g_root is None or self.budget < 1 or depth < 1:
            return EMPTY
        held = d.cache.length  # = L - 1: the newest committed token's pair was the last fed
        ids_k = d.model.vocab_ids

        def logq(g: torch.Tensor) -> torch.Tensor:
            """g [f, H] -> log q [f, V] for ranking: -inf outside the draft's token subset."""
            out = torch.full((g.shape[0], vocab_size), float("-inf"), device=g.device)
            out[:, ids_k] = draft_logprobs(d.reduced_head(g), params, len(ids_k))  # [f, K]
            return out

        fed_tokens: list[int] = []
        fed_parents: list[int] = []
        fed_g: list[torch.Tensor] = []  # g [H] per fed node, in feed order

        def step_fn(tokens, parents) -> torch.Tensor:
            first = len(fed_tokens)
            fed_tokens.extend(tokens)
            fed_parents.extend(parents)
            fed = make_tree(fed_tokens, fed_parents)
            f = len(tokens)
            feats = torch.stack([g_root[0] if parent < 0 else fed_g[parent] for parent in parents])  # [f, H]
            visible = torch.ones(f, held + len(fed), dtype=torch.bool, device=d.device)
            visible[:, held:] = ancestry(fed, d.device)[first:]  # committed, then own ancestors only
            positions = held + torch.tensor(fed.depth[first:], device=d.device)
            token_ids = torch.tensor(tokens, dtype=torch.long, device=d.device)
            g = draft_tree_forward(d.model, d.rotary, d.embed(token_ids), feats, d.cache, positions, visible)
            fed_g.extend(g)
            return logq(g)

        tree = expand(step_fn, logq(g_root)[0], self.budget, depth, self.top_k)
        d.cache.length = held  # the tree's entries are speculative: only target-fed positions stay
        return tree
