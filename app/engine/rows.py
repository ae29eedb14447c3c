"""argmax, top-k and finiteness along the vocabulary, in forms that stay cheap on a CPU.

A round reduces rows as wide as the vocabulary (49,152 for the embedded model). torch's CPU argmax, topk
and isfinite().all() walk such a row one element at a time: 100-200 µs each (torch 2.13, 2-core Xeon),
where amax and sum are vectorised (6-8 µs). On the native path a whole target pass is 3-6 ms, so a round's
dozen such calls were a fifth of it (docs/engine-notes.md). Here the row is cut into blocks of BLOCK
entries: the block maxima (vectorised) say which few blocks can hold the answer, and torch's own
reduction then runs on those blocks only. Results equal torch's, NaN and the first of equal maxima
included; the indices of entries tied at the k-th value of a top-k may be others of equal value (torch
leaves that choice unspecified too). A width BLOCK does not divide takes torch's own call.
"""

from __future__ import annotations

import torch

BLOCK = 64


def _blocks(x: torch.Tensor, least: int) -> torch.Tensor | None:
    """x [..., V] -> [..., V / BLOCK, BLOCK], or None where the block form does not pay or does not fit."""
    v = x.shape[-1]
    if v % BLOCK or v < least * BLOCK:
        return None
    return x.reshape(*x.shape[:-1], v // BLOCK, BLOCK)


def _gather_blocks(blocks: torch.Tensor, which: torch.Tensor) -> torch.Tensor:
    """blocks [..., nb, B], which [..., m] block indices -> [..., m, B]."""
    return blocks.gather(-2, which.unsqueeze(-1).expand(*which.shape, blocks.shape[-1]))


def argmax(x: torch.Tensor) -> torch.Tensor:
    """x [..., V] -> [...] long: torch.argmax(x, -1) (the first maximum; a NaN counts as the maximum)."""
    blocks = _blocks(x, 4)
    if blocks is None:
        return x.argmax(-1)
    # amax propagates NaN, so the first block holding a NaN (or else the maximum) wins, as in torch.argmax.
    first = blocks.amax(-1).argmax(-1, keepdim=True)  # [..., 1]
    inner = _gather_blocks(blocks, first).argmax(-1)  # [..., 1]
    return (first * BLOCK + inner).squeeze(-1)


def topk(x: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x [..., V] -> (values, indices) [..., k], largest first: torch.topk(x, k, -1).

    The k largest entries lie in the k blocks with the largest maxima: an entry outside them has k blocks
    whose maxima are at least as large, so k entries at least as large.
    """
    blocks = _blocks(x, 4 * k)
    if blocks is None:
        return torch.topk(x, k, dim=-1)
    chosen = blocks.amax(-1).topk(k, dim=-1).indices  # [..., k]
    values, at = _gather_blocks(blocks, chosen).flatten(-2).topk(k, dim=-1)  # among k * BLOCK candidates
    return values, chosen.gather(-1, at // BLOCK) * BLOCK + at % BLOCK


def finite_probs(*rows: torch.Tensor) -> torch.Tensor:
    """Probability rows (entries in [0, 1]) -> bool [len(rows)]: whether each tensor is all finite.

    A sum of entries in [0, 1] overflows nowhere, so it is finite exactly when every entry is; one
    vectorised sum per tensor replaces isfinite's element walk. An empty tensor is finite.
    """
    return torch.stack([r.sum(dtype=torch.float32) for r in rows]).isfinite()
