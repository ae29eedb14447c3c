"""Training the feature draft on the target's own sequences.

Loss per unrolled step s (EAGLE-1 loss, EAGLE-3's training-time test): at anchor j (the last position
with a real target feature) step s sits at position j + s - 1, reads token t_{j+s} and, for s > 1,
the draft's own g from step s - 1, and attends to the real-feature keys 0..j plus its own earlier
unrolled keys at that anchor: exactly the draft cache at inference. It predicts f_{j+s}:
SmoothL1(g, f) + ce_weight * CE(softmax(head_K f), head_K g), weighted 0.8^(s-1).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from app.engine.feature_net import FeatureDraftModel

from .data import Sequence

PROMPT_WEIGHT = 0.3  # prompt and teacher-forced text positions: cheap data, less like the answers drafted


@dataclass(frozen=True)
class Shared:
    """Frozen target tensors the draft uses: embedding [V, H], head rows [K, H], rotary module."""

    embed: torch.Tensor
    head_rows: torch.Tensor
    rotary: nn.Module  # the target's rotary embedding


@dataclass
class Batch:
    tokens: torch.Tensor  # [B, L]
    feats: torch.Tensor  # [B, L, H] float
    weight: torch.Tensor  # [B, L] loss weight of position L (0 = padding)
    top: torch.Tensor | None = None  # [B, L] target argmax over the full vocabulary (validation only)


def make_batches(seqs: list[Sequence], batch_tokens: int, max_len: int, rng: random.Random,
                 shuffle: bool = True) -> list[list[Sequence]]:
    """Group sequences (cut to max_len) into batches of about batch_tokens padded tokens."""
    order = list(range(len(seqs)))
    if shuffle:
        rng.shuffle(order)
    batches: list[list[Sequence]] = []
    current: list[Sequence] = []
    width = 0
    for i in order:
        n = min(len(seqs[i].tokens), max_len)
        if current and max(width, n) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, width = [], 0
        current.append(seqs[i])
        width = max(width, n)
    if current:
        batches.append(current)
    return batches


def collate(seqs: list[Sequence], max_len: int, device, tops: dict[int, torch.Tensor] | None = None) -> Batch:
    width = min(max(len(s.tokens) for s in seqs), max_len)
    b, h = len(seqs), seqs[0].feats.shape[-1]
    tokens = torch.zeros(b, width, dtype=torch.long)
    feats = torch.zeros(b, width, h, dtype=torch.bfloat16)
    weight = torch.zeros(b, width)
    top = torch.full((b, width), -1, dtype=torch.long) if tops is not None else None
    for i, s in enumerate(seqs):
        n = min(len(s.tokens), width)
        tokens[i, :n] = s.tokens[:n]
        feats[i, :n] = s.feats[:n]
        weight[i, :n] = PROMPT_WEIGHT
        weight[i, s.answer_start : n] = 1.0
        if top is not None and tops is not None:
            top[i, :n] = tops[id(s)][:n]
    return Batch(tokens.to(device), feats.to(device).float(), weight.to(device), top.to(device) if top is not None else None)


def _shift(x: torch.Tensor, s: int, length: int, fill=0):
    """x[:, s : s + length] padded at the end to `length` positions."""
    out = x[:, s : s + length]
    if out.shape[1] < length:
        pad = x.new_full((x.shape[0], length - out.shape[1], *x.shape[2:]), fill)
        out = torch.cat([out, pad], dim=1)
    return out


def _repeat_kv(x: torch.Tensor, heads: int) -> torch.Tensor:
    return x if x.shape[1] == heads else x.repeat_interleave(heads // x.shape[1], 1)


def tree_attend(q, kv1, diagonal):
    """Step s > 1: q [B, h, A, d] attends to step-1 keys 0..j (causal in the anchor j) and to the keys
    of steps 2..s at the same anchor (`diagonal`, own key last)."""
    heads, a, d = q.shape[1], q.shape[2], q.shape[3]
    scale = 1.0 / math.sqrt(d)
    k1, v1 = _repeat_kv(kv1[0], heads), _repeat_kv(kv1[1], heads)
    scores = (q @ k1.transpose(-1, -2)) * scale  # [B, h, A, A]
    causal = torch.ones(a, a, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    extra = [((q * _repeat_kv(k, heads)).sum(-1, keepdim=True) * scale) for k, _ in diagonal]
    weights = torch.cat([scores, *extra], dim=-1).float().softmax(-1).to(q.dtype)
    out = weights[..., :a] @ v1
    for i, (_, v) in enumerate(diagonal):
        out = out + weights[..., a + i : a + i + 1] * _repeat_kv(v, heads)
    return out


def unrolled_forward(draft: FeatureDraftModel, shared: Shared, batch: Batch, unroll: int, noise: float = 0.0,
                     generator: torch.Generator | None = None):
    """Yields (s, g [B, A, H], target f [B, A, H], weight [B, A], anchor count A) for s = 1..unroll."""
    tokens, feats = batch.tokens, batch.feats
    b, length = tokens.shape
    a = length - 1
    feat_in = feats[:, :a]
    if noise > 0:
        rms = feat_in.pow(2).mean(-1, keepdim=True).sqrt()
        u = torch.rand(feat_in.shape, generator=generator, device=feat_in.device)
        feat_in = feat_in + (2 * u - 1) * noise * rms
    kv1: list[tuple[torch.Tensor, torch.Tensor]] = []
    diagonal: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in draft.layers]
    g = feat_in  # the first step reads the target's features; later ones the draft's own output
    for s in range(1, unroll + 1):
        tok = _shift(tokens, s, a)
        x = draft.inputs(shared.embed[tok].to(feat_in.dtype), g)
        pos = (torch.arange(a, device=x.device) + s - 1).unsqueeze(0)
        cos, sin = shared.rotary(x, pos)
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        for li, layer in enumerate(draft.layers):
            q, k, v = layer.qkv(x, cos, sin)
            if s == 1:
                kv1.append((k, v))
                attn = F.scaled_dot_product_attention(q, _repeat_kv(k, q.shape[1]), _repeat_kv(v, q.shape[1]),
                                                      is_causal=True)
            else:
                diagonal[li].append((k, v))
                attn = tree_attend(q, kv1[li], diagonal[li])
            x = layer.finish(x, attn)
        g = draft.output(x)
        target = _shift(feats, s, a)
        # Valid where position j + s exists; weighted by the predicted position's kind.
        weight = _shift(batch.weight, s, a) * (batch.weight[:, :a] > 0)
        yield s, g, target, weight, a


def losses(draft, shared, batch, unroll, ce_weight, noise=0.0, generator=None):
    """Weighted training loss, and per-step (feature loss, CE) means for the progress line."""
    total = 0.0
    parts = []
    for s, g, target, weight, _ in unrolled_forward(draft, shared, batch, unroll, noise, generator):
        denom = weight.sum().clamp_min(1.0)
        feat_loss = (F.smooth_l1_loss(g, target, reduction="none").mean(-1) * weight).sum() / denom
        with torch.no_grad():
            t_probs = (target @ shared.head_rows.T).float().softmax(-1)  # [B, A, K]
        d_logp = (g @ shared.head_rows.T).float().log_softmax(-1)
        ce = (-(t_probs * d_logp).sum(-1) * weight).sum() / denom
        total = total + 0.8 ** (s - 1) * (feat_loss + ce_weight * ce)
        parts.append((feat_loss.item(), ce.item()))
    return total, parts


@torch.no_grad()
def agreement(draft, shared, batches: list[Batch], unroll: int, vocab_ids: torch.Tensor) -> list[float]:
    """Per unrolled step: how often the draft's top token equals the target's top token (full vocabulary),
    over answer positions of held-out sequences. A teacher-forced proxy for greedy acceptance."""
    hits = [0.0] * unroll
    seen = [0.0] * unroll
    for batch in batches:
        assert batch.top is not None  # held-out batches carry the target's argmax
        for s, g, _, weight, a in unrolled_forward(draft, shared, batch, unroll):
            mask = weight >= 1.0  # answer positions only
            guess = vocab_ids[(g @ shared.head_rows.T).argmax(-1)]
            truth = _shift(batch.top, s, a, fill=-1)
            hits[s - 1] += float(((guess == truth) & mask).sum())
            seen[s - 1] += float(mask.sum())
    return [h / n if n else 0.0 for h, n in zip(hits, seen, strict=True)]


