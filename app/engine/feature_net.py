"""The feature draft's network (EAGLE-1 style): `fc(cat(norm(E[t_{j+1}]), norm(f_j)))`, Llama decoder layers
and a final norm, with its own growing KV cache and the forward passes the drafter runs (a causal run
of positions, or tree nodes with explicit positions and a mask).

Weights: `fc.weight [H, 2H]`, `layers.i.*` in Llama naming, norms, and the subset `vocab_ids [K]`; the
embedding, head rows and rotary tables are the target's own, passed in and never owned.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .feature_format import FeatureDraftConfig


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    dtype = x.dtype
    x = x.float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x.to(dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama RoPE: x [B, h, L, d], cos/sin [B, L, d]."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class DraftLayer(nn.Module):
    """One Llama decoder layer with parameter names as in transformers (so target layers load into it)."""

    def __init__(self, cfg: FeatureDraftConfig, first: bool) -> None:
        super().__init__()
        h, d = cfg.hidden_size, cfg.head_dim
        self.cfg = cfg
        self.self_attn = nn.Module()
        self.self_attn.q_proj = nn.Linear(h, cfg.num_heads * d, bias=cfg.attention_bias)
        self.self_attn.k_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=cfg.attention_bias)
        self.self_attn.v_proj = nn.Linear(h, cfg.num_kv_heads * d, bias=cfg.attention_bias)
        self.self_attn.o_proj = nn.Linear(cfg.num_heads * d, h, bias=cfg.attention_bias)
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(h, cfg.intermediate_size, bias=cfg.mlp_bias)
        self.mlp.up_proj = nn.Linear(h, cfg.intermediate_size, bias=cfg.mlp_bias)
        self.mlp.down_proj = nn.Linear(cfg.intermediate_size, h, bias=cfg.mlp_bias)
        # EAGLE drops the first block's input norm: fc's output already mixes two normalised inputs.
        self.input_layernorm = None if first else nn.Module()
        if self.input_layernorm is not None:
            self.input_layernorm.weight = nn.Parameter(torch.ones(h))
        self.post_attention_layernorm = nn.Module()
        self.post_attention_layernorm.weight = nn.Parameter(torch.ones(h))

    def qkv(self, x, cos, sin):
        """x [B, L, H] -> q [B, h, L, d], k and v [B, kvh, L, d] with RoPE applied."""
        b, n, _ = x.shape
        a, d = self.self_attn, self.cfg.head_dim
        if self.input_layernorm is not None:
            x = rms_norm(x, self.input_layernorm.weight, self.cfg.rms_norm_eps)
        q = a.q_proj(x).view(b, n, -1, d).transpose(1, 2)
        k = a.k_proj(x).view(b, n, -1, d).transpose(1, 2)
        v = a.v_proj(x).view(b, n, -1, d).transpose(1, 2)
        return rotate(q, cos, sin), rotate(k, cos, sin), v

    def finish(self, x, attn):
        """Residual adds around attention output attn [B, h, L, d] and the MLP."""
        b, _, n, _ = attn.shape
        x = x + self.self_attn.o_proj(attn.transpose(1, 2).reshape(b, n, -1))
        y = rms_norm(x, self.post_attention_layernorm.weight, self.cfg.rms_norm_eps)
        m = self.mlp
        return x + m.down_proj(F.silu(m.gate_proj(y)) * m.up_proj(y))


def attend(q, k, v, mask):
    """q [B, h, L, d], k/v [B, kvh, S, d], mask bool [B or 1, 1, L, S] or None (attend to all)."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=k.shape[1] != q.shape[1])


class FeatureDraftModel(nn.Module):
    """The trainable part. Target tensors (embedding, head rows, rotary) are passed in, never owned."""

    def __init__(self, cfg: FeatureDraftConfig) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.cfg = cfg
        self.fc = nn.Linear(2 * h, h, bias=False)
        self.norm_embed = nn.Parameter(torch.ones(h))
        self.norm_feature = nn.Parameter(torch.ones(h))
        self.layers: list[DraftLayer] = nn.ModuleList([DraftLayer(cfg, i == 0) for i in range(cfg.n_layers)])  # type: ignore[assignment]
        self.norm = nn.Parameter(torch.ones(h))
        self.vocab_ids: torch.Tensor  # [K] the token subset of the reduced head
        self.register_buffer("vocab_ids", torch.zeros(cfg.vocab_k, dtype=torch.long))

    def inputs(self, embeds: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        """E[t_{j+1}] [.., H] and f_j [.., H] -> x_j [.., H]."""
        eps = self.cfg.rms_norm_eps
        e = rms_norm(embeds, self.norm_embed, eps)
        f = rms_norm(feats.to(embeds.dtype), self.norm_feature, eps)
        return self.fc(torch.cat([e, f], dim=-1))

    def output(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.norm, self.cfg.rms_norm_eps)


class DraftCache:
    """Per-layer K/V [1, kvh, capacity, d] grown by doubling, and the number of positions held."""

    def __init__(self) -> None:
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []
        self.length = 0

    def append(self, i: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store k/v [1, kvh, n, d] after the held positions of layer i; returns all held k/v of that layer."""
        end = self.length + k.shape[2]
        if i == len(self.k):
            cap = max(256, 2 * end)
            self.k.append(k.new_empty(1, k.shape[1], cap, k.shape[3]))
            self.v.append(v.new_empty(1, v.shape[1], cap, v.shape[3]))
        elif end > self.k[i].shape[2]:
            cap = 2 * end
            self.k[i] = torch.cat([self.k[i], self.k[i].new_empty(1, k.shape[1], cap - self.k[i].shape[2], k.shape[3])], 2)
            self.v[i] = torch.cat([self.v[i], self.v[i].new_empty(1, v.shape[1], cap - self.v[i].shape[2], v.shape[3])], 2)
        self.k[i][:, :, self.length : end] = k
        self.v[i][:, :, self.length : end] = v
        return self.k[i][:, :, :end], self.v[i][:, :, :end]


@torch.inference_mode()
def draft_forward(model: FeatureDraftModel, rotary, embeds, feats, cache: DraftCache) -> torch.Tensor:
    """Feed pairs (E[t_{j+1}], f_j) [n, H] at the positions after the cache; returns g [n, H]."""
    n = feats.shape[0]
    x = model.inputs(embeds, feats).unsqueeze(0)  # [1, n, H]
    pos = torch.arange(cache.length, cache.length + n, device=x.device).unsqueeze(0)
    cos, sin = rotary(x, pos)
    mask = None
    if n > 1:  # the new positions see everything cached and each other causally
        total = cache.length + n
        mask = torch.arange(total, device=x.device)[None, :] <= pos[0, :, None] if cache.length else None
        mask = mask.view(1, 1, n, total) if mask is not None else None
    for i, layer in enumerate(model.layers):
        q, k, v = layer.qkv(x, cos.to(x.dtype), sin.to(x.dtype))
        k_all, v_all = cache.append(i, k, v)
        attn = attend(q, k_all, v_all, mask) if mask is not None or n == 1 else _causal(q, k_all, v_all)
        x = layer.finish(x, attn)
    cache.length += n
    return model.output(x)[0]


@torch.inference_mode()
def draft_tree_forward(model: FeatureDraftModel, rotary, embeds, feats, cache: DraftCache, positions: torch.Tensor,
                       visible: torch.Tensor) -> torch.Tensor:
    """Feed n tree nodes (E[token], feature) [n, H] after the cache at explicit positions [n]; visible bool
    [n, cache.length + n] says which held and new entries each node attends to. Returns g [n, H]."""
    n = feats.shape[0]
    x = model.inputs(embeds, feats).unsqueeze(0)  # [1, n, H]
    cos, sin = rotary(x, positions.view(1, -1))
    mask = visible.view(1, 1, n, -1)
    for i, layer in enumerate(model.layers):
        q, k, v = layer.qkv(x, cos.to(x.dtype), sin.to(x.dtype))
        k_all, v_all = cache.append(i, k, v)
        x = layer.finish(x, attend(q, k_all, v_all, mask))
    cache.length += n
    return model.output(x)[0]


def _causal(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=k.shape[1] != q.shape[1])
