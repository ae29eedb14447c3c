"""A transformers Llama-family model's weights for the native kernel: fused q/k/v and gate/up, rotary
tables made once, and the meta array the kernel reads (kernel.c's M_* and L_* fields).

From a GGUF the 4-bit and 8-bit blocks are the file's own (checked against the weights transformers
dequantised from it, so a row order mistake can never pass); any other weight becomes Q8_0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from . import blocks
from .blocks import QMatrix
from .gguf_index import GgufIndex

FAMILIES = ("llama", "mistral", "qwen2")  # rotate-half rotary, RMSNorm, SiLU gate/up, no per-layer extras
PERMUTED = ("llama", "mistral")  # llama.cpp's converter reorders q and k rows of these (transformers undoes it)
MAX_TABLE = 32768  # rotary rows made at load; longer contexts stop there (context_limit says so)
MAX_GROUP = 16  # query heads per key head the kernel's scratch holds
M_META, LAYER_FIELDS = 16, 8


def native_support(model: nn.Module) -> str | None:
    """None when the native kernel runs this model exactly as its family defines it, else why not."""
    config = getattr(model, "config", None)
    if config is None:
        return "not a transformers model"
    config = config.get_text_config()
    kind = getattr(config, "model_type", None)
    if kind not in FAMILIES:
        return f"the native kernel covers {', '.join(FAMILIES)}, not {kind}"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"the native kernel has SiLU only, not {config.hidden_act}"
    if getattr(config, "use_sliding_window", False) or (kind == "mistral" and getattr(config, "sliding_window", None)):
        return "the native kernel has no sliding-window attention"
    rope = getattr(config, "rope_scaling", None) or getattr(config, "rope_parameters", None) or {}
    if isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in ("dynamic", "longrope"):
        return "the native kernel has no position-dependent rotary scaling"
    if getattr(config, "mlp_bias", False) or any(
            getattr(layer.self_attn.o_proj, "bias", None) is not None for layer in model.base_model.layers):
        return "the native kernel has no output or MLP biases"
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    if heads % kv or heads // kv > MAX_GROUP or head_dim % 2:
        return "the native kernel needs whole groups of at most 16 query heads per key head"
    for width in (config.hidden_size, config.intermediate_size, heads * head_dim):
        if width % blocks.BLOCK:
            return f"the native kernel needs widths in blocks of 32 ({width} is not)"
    for width in (heads * head_dim, kv * head_dim, config.intermediate_size):
        if width % blocks.PANEL:
            return f"the native kernel needs output widths in panels of 16 ({width} is not)"
    return None


@dataclass
class NativeWeights:
    """Everything the kernel reads, kept alive for its pointers."""

    meta: torch.Tensor  # int64 [M_META + LAYER_FIELDS * layers]
    layers: int
    hidden: int
    kv_width: int  # key (and value) floats per cache slot: kv heads x head dim
    vocab: int  # logits per row (the head's real rows)
    max_positions: int
    embed: QMatrix
    head: QMatrix
    kinds: str  # "Q4_1 + Q8_0", for people
    nbytes: int
    keep: list = field(default_factory=list)  # tensors the meta points into


def from_transformers(model: nn.Module, gguf: Path | None = None) -> NativeWeights:
    """The model's weights for the kernel: a GGUF's own blocks where `gguf` names the file it came from."""
    config = model.config.get_text_config()
    base = model.base_model
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    source = _GgufBlocks(gguf, config) if gguf is not None else None
    keep: list = []
    mats: list[QMatrix] = []

    def matrix(linear: nn.Linear, name: str | None) -> QMatrix:
        if source is not None and name is not None:
            mat = source.matrix(name, linear.weight)
            if mat is not None:
                return mat
        return blocks.from_float(linear.weight)

    def fused(parts: list[QMatrix], linears: list[nn.Linear]) -> QMatrix:
        if len({p.kind for p in parts}) == 1:
            return blocks.stack(parts)
        return blocks.from_float(torch.cat([lin.weight.detach().float() for lin in linears]))

    layer_fields = []
    for i, layer in enumerate(base.layers):
        att, mlp = layer.self_attn, layer.mlp
        qkv = fused([matrix(att.q_proj, f"blk.{i}.attn_q.weight"), matrix(att.k_proj, f"blk.{i}.attn_k.weight"),
                     matrix(att.v_proj, f"blk.{i}.attn_v.weight")], [att.q_proj, att.k_proj, att.v_proj])
        o = matrix(att.o_proj, f"blk.{i}.attn_output.weight")
        gate_up = fused([matrix(mlp.gate_proj, f"blk.{i}.ffn_gate.weight"), matrix(mlp.up_proj, f"blk.{i}.ffn_up.weight")],
                        [mlp.gate_proj, mlp.up_proj])
        down = matrix(mlp.down_proj, f"blk.{i}.ffn_down.weight")
        biases = [att.q_proj.bias, att.k_proj.bias, att.v_proj.bias]
        bias = torch.cat([b.detach().float() for b in biases]) if all(b is not None for b in biases) else None
        norms = [layer.input_layernorm.weight.detach().float().contiguous(),
                 layer.post_attention_layernorm.weight.detach().float().contiguous()]
        mats += [qkv, o, gate_up, down]
        keep += norms + ([bias] if bias is not None else [])
        layer_fields.append([norms[0].data_ptr(), qkv.desc.data_ptr(), 0 if bias is None else bias.data_ptr(),
                             o.desc.data_ptr(), norms[1].data_ptr(), gate_up.desc.data_ptr(), down.desc.data_ptr(), 0])
    embed_linear = model.get_input_embeddings()
    embed = (source.matrix("token_embd.weight", embed_linear.weight) if source else None) or blocks.from_float(embed_linear.weight)
    head_module = model.get_output_embeddings()
    if head_module.weight.data_ptr() == embed_linear.weight.data_ptr():
        head = embed  # tied: one copy serves the input rows and the logits
    else:
        head = (source.matrix("output.weight", head_module.weight) if source else None) or blocks.from_float(head_module.weight)
    mats += [embed] if head is embed else [embed, head]
    norm = base.norm.weight.detach().float().contiguous()
    cos, sin, max_positions = rotary_tables(model, head_dim)
    keep += [norm, cos, sin, *mats]
    eps = float(getattr(config, "rms_norm_eps", 1e-6))
    header = [len(base.layers), config.hidden_size, heads, kv, head_dim, config.intermediate_size, head.rows,
              struct.unpack("<q", struct.pack("<d", eps))[0], cos.data_ptr(), sin.data_ptr(), max_positions,
              embed.desc.data_ptr(), norm.data_ptr(), head.desc.data_ptr()]
    header += [0] * (M_META - len(header))
    meta = torch.tensor(header + [v for f in layer_fields for v in f], dtype=torch.int64)
    kinds = " + ".join(sorted({m.name for m in mats}))
    return NativeWeights(meta, len(base.layers), config.hidden_size, kv * head_dim, head.rows, max_positions,
                         embed, head, kinds, sum(m.nbytes for m in mats), keep)


def rotary_tables(model: nn.Module, head_dim: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """cos, sin [positions, head_dim / 2] as transformers computes them (its inv_freq and attention scaling)."""
    rotary = model.base_model.rotary_emb
    config = model.config.get_text_config()
    positions = min(int(getattr(config, "max_position_embeddings", 4096) or 4096), MAX_TABLE)
    inv_freq = rotary.inv_freq.detach().float().cpu()[: head_dim // 2]
    scaling = float(getattr(rotary, "attention_scaling", 1.0) or 1.0)
    freqs = torch.arange(positions, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return (freqs.cos() * scaling).contiguous(), (freqs.sin() * scaling).contiguous(), positions


class _GgufBlocks:
    """A GGUF file's Q4_1 and Q8_0 tensors, each checked against the weight transformers loaded from it."""

    CHECK_EVERY = 7  # rows compared per matrix: every 7th and the last (a row-order mistake moves nearly all)

    def __init__(self, path: Path, config) -> None:
        self.index = GgufIndex(path)
        self.permute = config.model_type in PERMUTED
        self.heads, self.kv = config.num_attention_heads, config.num_key_value_heads

    def matrix(self, name: str, weight: torch.Tensor) -> QMatrix | None:
        info = self.index.tensors.get(name)
        if info is None or info.kind not in ("Q4_1", "Q8_0"):
            return None
        rows, k = weight.shape
        raw = self.index.rows(name)
        order = None
        if self.permute and name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = self.heads if name.endswith("attn_q.weight") else self.kv
            order = _reverse_permutation(rows, heads).numpy()
        # transformers dequantised this file into `weight`: sampled rows of the blocks must hold exactly those
        # numbers (the whole matrix took a second a load; a wrong row order or layout fails every sample)
        sample = np.unique(np.r_[np.arange(0, rows, self.CHECK_EVERY), rows - 1])
        picked = sample if order is None else order[sample]
        check = blocks.from_gguf_blocks(info.kind, raw[picked], k).dequantize()
        if not torch.allclose(check, weight.detach()[torch.from_numpy(sample)].float(), rtol=1e-6, atol=1e-7):
            return None
        return blocks.from_gguf_blocks(info.kind, raw, k, order)


def _reverse_permutation(rows: int, heads: int) -> torch.Tensor:
    """The row order transformers' reverse_permute_weights gives llama.cpp's q/k rows (new row i = old row)."""
    dim = rows // heads // 2
    if heads * 2 * dim != rows:
        return torch.arange(rows)
    return torch.arange(rows).reshape(heads, dim, 2).transpose(1, 2).reshape(rows)
