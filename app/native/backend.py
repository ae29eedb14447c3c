"""The native model as the engine's CacheBackend: every call one kernel pass, its KV cache plain float32
tensors [layers, capacity, kv width] that grow by doubling, a tree's compaction an index copy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from app.native import thread_count
from app.native.build import NativeWeights

FIRST_CAPACITY = 256


@dataclass
class NativeCache:
    keys: torch.Tensor  # [layers, capacity, kv width] float32
    values: torch.Tensor
    length: int = 0

    def __post_init__(self) -> None:
        self.buffers = (self.keys.numpy(), self.values.numpy())  # what the kernel writes (it checks their sizes)

    @property
    def capacity(self) -> int:
        return self.keys.shape[1]

    def rollback(self, length: int) -> None:
        """Keep the first `length` positions (kv.rollback calls this for a model's own cache)."""
        self.length = min(self.length, length)


def _cache(layers: int, width: int, capacity: int) -> NativeCache:
    return NativeCache(torch.zeros(layers, capacity, width), torch.zeros(layers, capacity, width))


class NativeBackend:
    device = torch.device("cpu")

    def __init__(self, weights: NativeWeights) -> None:
        self.weights = weights
        self.kernel = weights.build  # the build whose Model the weights hold

    def new_cache(self) -> NativeCache:
        w = self.weights
        return _cache(w.layers, w.kv_width, FIRST_CAPACITY)

    def length(self, cache: NativeCache) -> int:
        return cache.length

    def _room(self, cache: NativeCache, rows: int) -> None:
        need = cache.length + rows
        if need <= cache.capacity:
            return
        capacity = cache.capacity
        while capacity < need:
            capacity *= 2
        grown = _cache(self.weights.layers, self.weights.kv_width, capacity)
        grown.keys[:, : cache.length] = cache.keys[:, : cache.length]
        grown.values[:, : cache.length] = cache.values[:, : cache.length]
        cache.keys, cache.values, cache.buffers = grown.keys, grown.values, grown.buffers

    def _pass(self, cache: NativeCache, ids: torch.Tensor, positions: torch.Tensor | None, visible: torch.Tensor | None,
              keep: int, hidden: bool, masked_from: int = 0) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """visible: uint8 [n, held - masked_from + n], which of the slots from masked_from on each row sees
        (every row sees the slots before it), or None: causal."""
        w = self.weights
        n = int(ids.numel())
        held = cache.length
        if positions is None:
            positions = torch.arange(held, held + n, dtype=torch.int64)
        positions = positions.to(torch.int64).contiguous()
        if int(positions.max()) >= w.max_positions:
            raise ValueError(f"the context passed {w.max_positions} positions, the most this model's rotary table holds")
        self._room(cache, n)
        tokens = ids.to(torch.int64).contiguous().view(-1)
        hidden_out = torch.empty(n, w.hidden) if hidden else None
        logits = torch.empty(keep, w.head.n) if keep else None
        self.kernel.forward(
            w.model, tokens.numpy(), None, positions.view(-1).numpy(), held, masked_from,
            None if visible is None else visible.numpy(), *cache.buffers,
            None if hidden_out is None else hidden_out.numpy(), keep, None if logits is None else logits.numpy(),
            thread_count())
        cache.length = held + n
        return hidden_out, None if logits is None else logits[:, : w.vocab]

    @torch.inference_mode()
    def forward(self, cache: NativeCache, ids: torch.Tensor, keep: int) -> torch.Tensor:
        return self._pass(cache, ids, None, None, keep, hidden=False)[1]

    @torch.inference_mode()
    def trunk(self, cache: NativeCache, ids: torch.Tensor) -> torch.Tensor:
        return self._pass(cache, ids, None, None, 0, hidden=True)[0]

    @torch.inference_mode()
    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        w = self.weights
        rows = hidden.reshape(-1, w.hidden).float().contiguous()
        out = torch.empty(rows.shape[0], w.head.n)
        # the head's own activation digits, as the pass's head reads them: a feature draft's verify (trunk, then
        # head) must give the logits target-only's forward gives, bit for bit
        self.kernel.matmul(w.head.native(self.kernel, w.digits.head), rows.numpy(), out.numpy(), thread_count())
        return out[:, : w.vocab].reshape(*hidden.shape[:-1], w.vocab)

    def rollback(self, cache: NativeCache, length: int) -> None:
        cache.rollback(length)

    @torch.inference_mode()
    def tree_forward(self, cache: NativeCache, ids: torch.Tensor, positions: torch.Tensor, visible: torch.Tensor,
                     keep: int | None) -> torch.Tensor:
        held = cache.length
        if tuple(visible.shape) != (ids.numel(), held + ids.numel()):
            raise ValueError(f"a tree pass of {ids.numel()} rows on {held} cached slots needs visibility "
                             f"[{ids.numel()}, {held + ids.numel()}], not {list(visible.shape)}")
        # The slots every row sees lead (the context); a draft's later tree level sees only its own ancestors
        # among the levels already cached, so the mask starts at the first cached slot some row does not see.
        unseen = (~visible[:, :held].all(0)).nonzero()
        masked_from = int(unseen[0]) if len(unseen) else held
        seen = visible[:, masked_from:].to(torch.uint8).contiguous()  # [n, held - masked_from + n]
        hidden, logits = self._pass(cache, ids, positions, seen, 0 if keep is None else keep, hidden=keep is None,
                                    masked_from=masked_from)
        return hidden if keep is None else logits

    @torch.inference_mode()
    def compact(self, cache: NativeCache, past_len: int, path: Sequence[int]) -> None:
        k = len(path)
        if k and list(path) != list(range(k)):
            src = past_len + torch.as_tensor(list(path), dtype=torch.long)
            cache.keys[:, past_len : past_len + k] = cache.keys.index_select(1, src)
            cache.values[:, past_len : past_len + k] = cache.values.index_select(1, src)
        self.rollback(cache, past_len + k)

    def sync(self) -> None:
        pass

    def context_limit(self) -> int | None:
        return self.weights.max_positions

    def splits_head(self) -> bool:
        return True  # logits are exactly head(trunk): the kernel's head is this matmul on those rows

    def tree_support(self) -> str | None:
        return None
