"""Sampling transforms shared by p (target) and q (draft).

The acceptance test is only exact when p and q come from the same transform, so both
sides go through `logits_to_probs` with the same `DecodeParams`.
"""

from __future__ import annotations

import torch

from . import rows

# Defined torch-free in params.py (the window builds its controls before torch loads); re-exported here.
from .params import DecodeParams  # noqa: F401


def fit_vocab(logits: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Cut padded embedding rows, or pad a smaller draft vocabulary with -inf, to vocab_size."""
    n = logits.shape[-1]
    if n == vocab_size:
        return logits
    if n > vocab_size:
        return logits[..., :vocab_size]
    pad = logits.new_full((*logits.shape[:-1], vocab_size - n), float("-inf"))
    return torch.cat([logits, pad], dim=-1)


def on_subset(q_k: torch.Tensor, vocab_ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """q over a token subset, q_k [..., K] at the ids vocab_ids [K], as a distribution over the whole
    vocabulary [..., V]: exactly 0 outside the subset, so a draft that samples only from the subset reports the
    q it drew from, and the residual max(p - q, 0) then carries every token outside it (FR-Spec's reduced head)."""
    q = q_k.new_zeros(*q_k.shape[:-1], vocab_size)
    return q.index_copy_(-1, vocab_ids, q_k)


def logits_to_probs(logits: torch.Tensor, params: DecodeParams) -> torch.Tensor:
    """logits [..., V] -> probs [..., V] in float32: temperature, then top-k, then top-p."""
    if params.greedy:
        # One-hot on the argmax: the acceptance rule then reduces to exact greedy matching.
        probs = torch.zeros_like(logits, dtype=torch.float32)
        probs.scatter_(-1, rows.argmax(logits).unsqueeze(-1), 1.0)
        # argmax picks a NaN as the maximum: keep broken rows NaN, as softmax would, so accept() sees them.
        # (amax propagates NaN: one vectorised pass, where isnan().any() walks the row.)
        return probs.masked_fill_(logits.amax(-1, keepdim=True).isnan(), float("nan"))
    logits = logits.float() / params.temperature
    if 0 < params.top_k < logits.shape[-1]:
        kth = rows.topk(logits, params.top_k)[0][..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if params.top_p < 1.0:
        logits = top_p_filter(logits, params.top_p)
    return logits.softmax(-1)


TOP_P_FIRST = 128  # candidates a CPU top-p looks at first; four times as many while their mass falls short


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """logits [..., V] float32 -> the same with -inf wherever the mass of the larger tokens before it
    already reaches top_p (the largest always stays).

    On a CPU a full sort of the vocabulary is the slow part (3.9 ms a 49,152-wide row, torch 2.13, where the
    native target's whole step is 3-6 ms: docs/engine-notes.md), and the nucleus is almost always a few
    dozen tokens: the largest ones are taken by top-k, a few more at a time until the mass before the last
    reaches top_p. Elsewhere (a GPU: sort is fast there, and the loop's test would wait for the device) the
    whole row is sorted.
    """
    probs = logits.softmax(-1)
    width = logits.shape[-1]
    k = width if logits.device.type != "cpu" else min(TOP_P_FIRST, width)
    while True:
        top, order = rows.topk(probs, k) if k < width else torch.sort(probs, dim=-1, descending=True)
        top = top.double()  # summed in float64: over thousands of tokens float32 drifts by ~1e-6 at the edge
        before = top.cumsum(-1) - top  # [..., k] mass of the larger tokens
        if k == width or bool((before[..., -1] >= top_p).all()):
            break  # every row's nucleus ends inside the first k
        k = min(width, 4 * k)
    kept = logits.gather(-1, order).masked_fill(before >= top_p, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter_(-1, order, kept)


def sample(probs: torch.Tensor, generator: torch.Generator | None, greedy: bool = False) -> torch.Tensor:
    """probs [..., V] (need not be normalised) -> token ids [...], without a host sync.

    Inverse CDF: one uniform per row against a float64 cumulative sum, far cheaper on a CPU than an
    exponential race over the vocabulary (docs/engine-notes.md). A zero-probability token never owns
    an interval of the CDF, so it is never drawn.
    greedy: probs are logits_to_probs' one-hot rows, whose argmax is the only possible draw.
    """
    if greedy:
        return rows.argmax(probs)
    cdf = probs.double().cumsum(-1)  # [..., V]
    u = torch.rand((*cdf.shape[:-1], 1), generator=generator, device=cdf.device, dtype=torch.float64)
    total = cdf[..., -1:]
    # u * total can round up to total itself; the largest double below it still lands on a real token.
    target = torch.minimum(u * total, torch.nextafter(total, torch.zeros_like(total)))
    first = torch.searchsorted(cdf, target, right=True).squeeze(-1)  # first index with cdf > target
    return first.clamp_max(cdf.shape[-1] - 1)  # a NaN row finds no index: stay in range, accept() rejects it
