"""EAGLE-1-style feature draft (chain drafting) with an FR-Spec reduced head.

The draft reads the target's final-norm hidden states f_j of committed positions, which the verify
pass returns for the positions it keeps (no second target pass). At position j it computes
`fc(cat(norm(E[t_{j+1}]), norm(f_j)))`, runs one (or a few) decoder layers with its own KV cache and
a final norm, giving g_j ~ f_{j+1}; later draft steps feed g back as the feature. Logits are taken
against the target's own output rows for a subset of K frequent tokens; q is scattered into a
full-vocabulary distribution that is zero outside the subset, so `accept` and its residual stay
exact (the residual carries the excluded tokens).

State (see `FeatureDrafter`): the draft cache only ever holds positions whose feature came from the
target ("stable"); speculative entries are cropped after every round, and the features of rejected
positions are never handed over. Weights: `fc.weight [H, 2H]`, `layers.i.*` in Llama naming, norms,
and the subset `vocab_ids [K]`; the embedding, head rows and rotary tables are the target's own.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from .sampling import DecodeParams, logits_to_probs, sample

FORMAT = "speclens-feature-draft"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class FeatureDraftConfig:
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    n_layers: int
    vocab_k: int  # rows of the reduced head
    attention_bias: bool = False
    mlp_bias: bool = False
    min_confidence: float = 0.0  # confidence stop: draft no further when max softmax < this (0 = off)
    fingerprint: dict = field(default_factory=dict)  # of the target it was trained for

    def to_json(self) -> dict:
        return {"format": FORMAT, "version": FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict) -> FeatureDraftConfig:
        if data.get("format") != FORMAT:
            raise ValueError("not a SpecLens feature-draft config")
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"feature-draft format version {data.get('version')} is not supported")
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    @classmethod
    def for_target(cls, target, n_layers: int, vocab_k: int, **kw) -> FeatureDraftConfig:
        c = target.config.get_text_config()
        heads = c.num_attention_heads
        return cls(
            hidden_size=c.hidden_size, num_heads=heads, num_kv_heads=getattr(c, "num_key_value_heads", heads) or heads,
            head_dim=getattr(c, "head_dim", None) or c.hidden_size // heads, intermediate_size=c.intermediate_size,
            rms_norm_eps=c.rms_norm_eps, n_layers=n_layers, vocab_k=vocab_k,
            attention_bias=bool(getattr(c, "attention_bias", False)), mlp_bias=bool(getattr(c, "mlp_bias", False)),
            fingerprint=fingerprint(target), **kw,
        )


# ---------------------------------------------------------------- target fingerprint


def fingerprint(target) -> dict:
    """What a draft must match: architecture, hidden size, vocabulary rows and a hash of the embedding.

    The hash is over the embedding in bfloat16, so the same weights loaded in float32 or bfloat16 agree.
    """
    c = target.config.get_text_config()
    emb = target.get_input_embeddings().weight.detach()
    digest = hashlib.sha256(emb.to("cpu", torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes())
    arch = (getattr(target.config, "architectures", None) or [type(target).__name__])[0]
    return {"architecture": arch, "hidden_size": int(c.hidden_size), "vocab_rows": int(emb.shape[0]),
            "embedding_sha256": digest.hexdigest()[:32]}


def fingerprint_mismatch(expected: dict, actual: dict) -> str | None:
    """A one-line reason when a draft's fingerprint does not match the target's, else None."""
    labels = {"architecture": "architecture", "hidden_size": "hidden size", "vocab_rows": "vocabulary size",
              "embedding_sha256": "embedding weights"}
    for key, label in labels.items():
        if expected.get(key) != actual.get(key):
            if key == "embedding_sha256":
                return "it was trained for a different target (the embedding weights differ)"
            return f"it was trained for a different target ({label} {expected.get(key)} vs {actual.get(key)})"
    return None


# ---------------------------------------------------------------- the network


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
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class FeatureDraftModel(nn.Module):
    """The trainable part. Target tensors (embedding, head rows, rotary) are passed in, never owned."""

    def __init__(self, cfg: FeatureDraftConfig) -> None:
        super().__init__()
        h = cfg.hidden_size
        self.cfg = cfg
        self.fc = nn.Linear(2 * h, h, bias=False)
        self.norm_embed = nn.Parameter(torch.ones(h))
        self.norm_feature = nn.Parameter(torch.ones(h))
        self.layers = nn.ModuleList([DraftLayer(cfg, i == 0) for i in range(cfg.n_layers)])
        self.norm = nn.Parameter(torch.ones(h))
        self.register_buffer("vocab_ids", torch.zeros(cfg.vocab_k, dtype=torch.long))

    def inputs(self, embeds: torch.Tensor, feats: torch.Tensor) -> torch.Tensor:
        """E[t_{j+1}] [.., H] and f_j [.., H] -> x_j [.., H]."""
        eps = self.cfg.rms_norm_eps
        e = rms_norm(embeds, self.norm_embed, eps)
        f = rms_norm(feats.to(embeds.dtype), self.norm_feature, eps)
        return self.fc(torch.cat([e, f], dim=-1))

    def output(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.norm, self.cfg.rms_norm_eps)


def init_from_target(draft: FeatureDraftModel, target, layer_index: int | None = None) -> None:
    """Copy target decoder layers (the last ones by default) into the draft's layers, and its final norm.

    fc starts as the identity on the feature half, so before training g_j is the target's last
    layer applied to (roughly) its own feature: a start that trains faster than random weights.
    """
    layers = target.base_model.layers
    n = draft.cfg.n_layers
    start = len(layers) - n if layer_index is None else layer_index
    with torch.no_grad():
        for i, layer in enumerate(draft.layers):
            source = layers[start + i].state_dict()
            own = layer.state_dict()
            layer.load_state_dict({k: v for k, v in source.items() if k in own}, strict=False)
        draft.norm.copy_(target.base_model.norm.weight)
        h = draft.cfg.hidden_size
        draft.fc.weight.mul_(0.1)
        draft.fc.weight[:, h:] += torch.eye(h)


# ---------------------------------------------------------------- inference


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


def _causal(q, k, v):
    if k.shape[1] != q.shape[1]:
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class FeatureDrafter:
    """The Drafter for a feature draft. decode() hands it the target's features through `observe`.

    Positions: the context has N tokens; the target has features for positions 0..N-2 (the newest
    token has not been through it yet). `stable` counts the positions in the draft cache, all fed with
    target features; `pending` holds committed features not yet fed.
    """

    wants_features = True

    def __init__(self, model: FeatureDraftModel, target, name: str = "feature draft",
                 min_confidence: float | None = None) -> None:
        self.model = model.eval()
        self.name = name
        self.embed = target.get_input_embeddings()
        head = target.get_output_embeddings().weight
        self.device = head.device
        self.dtype = head.dtype
        self.rotary = target.base_model.rotary_emb
        rows = head.detach()[model.vocab_ids].to(self.dtype)  # [K, H]
        # The reduced head as a module, so a CPU path can swap in packed kernels (app.models.packed).
        self.reduced_head = nn.Linear(rows.shape[1], rows.shape[0], bias=False, device="meta")
        self.reduced_head.weight = nn.Parameter(rows, requires_grad=False)
        self.min_confidence = model.cfg.min_confidence if min_confidence is None else min_confidence
        self.generator = torch.Generator(device=self.device)
        self.begin()

    def seed(self, seed: int) -> None:
        self.generator.manual_seed(seed)

    def begin(self) -> None:
        self.cache = DraftCache()
        self.stable = 0
        self.pending = torch.empty(0, self.model.cfg.hidden_size, device=self.device, dtype=self.dtype)

    def observe(self, features: torch.Tensor, start: int) -> None:
        """Committed target features [k, H] for positions start..start+k-1 (called after each verify)."""
        if start != self.cache.length + len(self.pending):
            raise RuntimeError(f"features for position {start} arrived, expected {self.cache.length + len(self.pending)}")
        self.pending = torch.cat([self.pending, features.to(self.dtype)])

    def rollback(self, length: int) -> None:
        # Only target-fed positions survive: speculative entries (fed with g) go whatever was accepted.
        self.cache.length = min(self.stable, length)

    @torch.inference_mode()
    def draft(self, ids, ids_list, gamma, params: DecodeParams, vocab_size):
        start = self.cache.length
        n_ctx = len(ids_list)
        self.stable = start
        if len(self.pending) == 0:  # the first round: the prompt has not been through the target yet
            return ids.new_empty(0), torch.empty(0, vocab_size, device=ids.device)
        if start + len(self.pending) != n_ctx - 1:
            raise RuntimeError(f"the draft holds features up to {start + len(self.pending)} for a {n_ctx}-token context")
        # Catch-up: pairs (f_j, t_{j+1}) for the pending positions, then gamma - 1 steps feeding g back.
        tokens = ids[start + 1 : n_ctx].to(self.device)
        g = draft_forward(self.model, self.rotary, self.embed(tokens), self.pending, self.cache)[-1:]
        self.stable = self.cache.length
        self.pending = self.pending[:0]
        ids_k = self.model.vocab_ids
        out_tokens, qs = [], []
        for i in range(gamma):
            logits = self.reduced_head(g)[0]  # [K]
            if i > 0 and self.min_confidence > 0 and float(logits.float().softmax(-1).max()) < self.min_confidence:
                break  # decided from q_i before drawing x_i, so the proposal stays exact
            q_k = logits_to_probs(logits, params)  # [K]; same transform as p, zero outside the subset
            j = sample(q_k, self.generator, params.greedy)
            x_i = ids_k[j]
            q_i = torch.zeros(vocab_size, dtype=torch.float32, device=self.device)
            q_i[ids_k] = q_k
            out_tokens.append(x_i)
            qs.append(q_i)
            if i + 1 < gamma:
                g = draft_forward(self.model, self.rotary, self.embed(x_i.view(1)), g, self.cache)
        return torch.stack(out_tokens), torch.stack(qs)
