"""The target's cache as rounds see it on a growing cache (transformers' DynamicCache, or any model's own
backend): the context grows on the device, a pass feeds what the cache lacks plus the proposal, and
after the rule the cache keeps the context plus the accepted path (a crop, or a compaction for a tree).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from .clock import Clock
from .protocols import Verified
from .tree_verify import tree_pass

if TYPE_CHECKING:
    from .proposals import Proposal
    from .protocols import CacheBackend, CacheKind


class DynamicRoundCache:
    kind: CacheKind = "dynamic"

    def __init__(self, backend: CacheBackend, prompt: list[int]) -> None:
        self.backend = backend
        self.device = backend.device
        self.ids = torch.tensor(prompt, dtype=torch.long, device=self.device)  # the context on the device
        self.cache = backend.new_cache()
        self.clock = Clock(self.device)

    def context(self, ids_list: list[int], gamma: int) -> torch.Tensor:
        """The context on the device [L], grown by the tokens the last round emitted (ids_list's tail)."""
        if len(ids_list) > len(self.ids):
            tail = torch.tensor(ids_list[len(self.ids) :], dtype=self.ids.dtype, device=self.device)
            self.ids = torch.cat([self.ids, tail])
        return self.ids

    def verify(self, ids_list: list[int], proposal: Proposal, features: bool) -> Verified:
        """One target pass over the uncached context (the root, the newest token, last) and the proposal."""
        past_len = len(ids_list)
        start = self.backend.length(self.cache)
        fresh = self.ids[start:]
        m, n = past_len - start, len(proposal.x)
        if proposal.tree is None:
            fed = torch.cat([fresh, proposal.x])  # one pass: the uncached context, then every draft
            if features:
                hidden = self.backend.trunk(self.cache, fed)  # [m + n, H]
                return Verified(self.backend.head(hidden[m - 1 :]), hidden, m, start)
            return Verified(self.backend.forward(self.cache, fed, keep=n + 1), None, m, start)
        if features:
            hidden = tree_pass(self.backend, self.cache, fresh, proposal.tree, past_len, trunk=True)  # [m + n, H]
            return Verified(self.backend.head(hidden[m - 1 :]), hidden, m, start)
        return Verified(tree_pass(self.backend, self.cache, fresh, proposal.tree, past_len), None, m, start)

    def keep(self, ids_list: list[int], path: Sequence[int], emitted: Sequence[int]) -> None:
        """The cache keeps the context plus the accepted rows; the new token is fed next round."""
        self.backend.compact(self.cache, len(ids_list), path)
