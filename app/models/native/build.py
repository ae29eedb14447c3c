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
    parts: dict = field(default_factory=dict)  # by part name (parts_of), for native/stored.py


class ModuleFloats:
    """A transformers module's float weights by name (no copy); checks sample every 7th row and the last."""

    CHECK_EVERY = 7  # a row-order mistake moves nearly all rows

    def __init__(self, model: nn.Module) -> None:
        self.weights = model.state_dict(keep_vars=True)  # tied heads keep their own name

    def has(self, name: str) -> bool:
        return name in self.weights

    def get(self, name: str) -> torch.Tensor | None:
        w = self.weights.get(name)
        return None if w is None else w.detach()

    def sample(self, name: str, rows: int) -> tuple[np.ndarray, torch.Tensor]:
        picked = np.unique(np.r_[np.arange(0, rows, self.CHECK_EVERY), rows - 1])
        return picked, self.weights[name].detach()[torch.from_numpy(picked)].float()


class SafetensorsFloats:
    """The float weights transformers dequantised a GGUF into (the conversion cache's model.safetensors),
    read from the mapped file only where asked: a light load never holds the float matrices."""

    CHECK_ROWS = 32  # a head's worth of rows and the last: a row order or layout mistake moves them too

    TIED = {"model.embed_tokens.weight": "lm_head.weight", "lm_head.weight": "model.embed_tokens.weight"}

    def __init__(self, file: Path, tied: bool) -> None:
        from safetensors import safe_open

        self.file = safe_open(str(file), framework="pt")
        self.names = set(self.file.keys())
        self.tied = tied  # the file holds one of a tied pair (safetensors drops the duplicate)

    def _stored(self, name: str) -> str | None:
        if name in self.names:
            return name
        other = self.TIED.get(name) if self.tied else None
        return other if other in self.names else None

    def has(self, name: str) -> bool:
        return self._stored(name) is not None

    def get(self, name: str) -> torch.Tensor | None:
        stored = self._stored(name)
        return None if stored is None else self.file.get_tensor(stored)

    def sample(self, name: str, rows: int) -> tuple[np.ndarray, torch.Tensor]:
        part = self.file.get_slice(self._stored(name))
        head = min(rows, self.CHECK_ROWS)
        picked = np.unique(np.r_[np.arange(head), rows - 1])
        return picked, torch.cat([part[:head], part[rows - 1 : rows]])[: len(picked)].float()


def from_transformers(model: nn.Module, gguf: Path | None = None) -> NativeWeights:
    """The model's weights for the kernel: a GGUF's own blocks where `gguf` names the file it came from."""
    return from_floats(model.config, ModuleFloats(model), gguf)


def from_floats(config, floats: ModuleFloats | SafetensorsFloats, gguf: Path | None = None) -> NativeWeights:
    """The weights for the kernel, by transformers' names: a GGUF's own blocks where `gguf` names the file the
    floats were dequantised from (each checked against them), else the floats as Q8_0."""
    return assemble(config, parts_of(config, floats, gguf))


def parts_of(config, floats: ModuleFloats | SafetensorsFloats, gguf: Path | None = None) -> dict:
    """The kernel's matrices and float vectors by part name ("{i}.qkv", "{i}.attn_norm", ..., "embed", "head"
    (absent when tied), "norm"): what `assemble` lays out and native/stored.py keeps."""
    config = config.get_text_config()
    source = _GgufBlocks(gguf, config, floats) if gguf is not None else None

    def floats_of(name: str) -> torch.Tensor:
        w = floats.get(name)
        if w is None:
            raise ValueError(f"the model has no weight {name}")
        return w.float().contiguous()

    def matrix(name: str, gguf_name: str | None) -> QMatrix:
        if source is not None and gguf_name is not None:
            mat = source.matrix(gguf_name, name)
            if mat is not None:
                return mat
        return blocks.from_float(floats_of(name))

    def fused(parts: list[QMatrix], names: list[str]) -> QMatrix:
        if len({p.kind for p in parts}) == 1:
            return blocks.stack(parts)
        return blocks.from_float(torch.cat([floats_of(n) for n in names]))

    parts: dict = {}
    for i in range(config.num_hidden_layers):
        at, ml = f"model.layers.{i}.self_attn.", f"model.layers.{i}.mlp."
        qkv_names = [at + "q_proj.weight", at + "k_proj.weight", at + "v_proj.weight"]
        gate_up_names = [ml + "gate_proj.weight", ml + "up_proj.weight"]
        biases = [floats.get(at + f"{x}_proj.bias") for x in "qkv"]
        parts |= {
            f"{i}.attn_norm": floats_of(f"model.layers.{i}.input_layernorm.weight"),
            f"{i}.qkv": fused([matrix(n, f"blk.{i}.attn_{x}.weight") for n, x in zip(qkv_names, "qkv", strict=True)],
                              qkv_names),
            f"{i}.o": matrix(at + "o_proj.weight", f"blk.{i}.attn_output.weight"),
            f"{i}.mlp_norm": floats_of(f"model.layers.{i}.post_attention_layernorm.weight"),
            f"{i}.gate_up": fused([matrix(gate_up_names[0], f"blk.{i}.ffn_gate.weight"),
                                   matrix(gate_up_names[1], f"blk.{i}.ffn_up.weight")], gate_up_names),
            f"{i}.down": matrix(ml + "down_proj.weight", f"blk.{i}.ffn_down.weight"),
        }
        if all(b is not None for b in biases):
            parts[f"{i}.qkv_bias"] = torch.cat([b.float() for b in biases])
    parts["embed"] = matrix("model.embed_tokens.weight", "token_embd.weight")
    if not getattr(config, "tie_word_embeddings", False) and floats.has("lm_head.weight"):
        parts["head"] = matrix("lm_head.weight", "output.weight")  # else tied: one copy serves input and logits
    parts["norm"] = floats_of("model.norm.weight")
    return parts


def assemble(config, parts: dict) -> NativeWeights:
    """The meta array the kernel reads (kernel.c's M_* and L_* fields) over the parts, kept alive with it."""
    config = config.get_text_config()
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    layers = config.num_hidden_layers
    embed = parts["embed"]
    head = parts.get("head", embed)
    cos, sin, max_positions = rotary_tables(config, head_dim)
    layer_fields = []
    for i in range(layers):
        bias = parts.get(f"{i}.qkv_bias")
        layer_fields.append([parts[f"{i}.attn_norm"].data_ptr(), parts[f"{i}.qkv"].desc.data_ptr(),
                             0 if bias is None else bias.data_ptr(), parts[f"{i}.o"].desc.data_ptr(),
                             parts[f"{i}.mlp_norm"].data_ptr(), parts[f"{i}.gate_up"].desc.data_ptr(),
                             parts[f"{i}.down"].desc.data_ptr(), 0])
    eps = float(getattr(config, "rms_norm_eps", 1e-6))
    header = [layers, config.hidden_size, heads, kv, head_dim, config.intermediate_size, head.rows,
              struct.unpack("<q", struct.pack("<d", eps))[0], cos.data_ptr(), sin.data_ptr(), max_positions,
              embed.desc.data_ptr(), parts["norm"].data_ptr(), head.desc.data_ptr()]
    header += [0] * (M_META - len(header))
    meta = torch.tensor(header + [v for f in layer_fields for v in f], dtype=torch.int64)
    mats = [p for p in parts.values() if isinstance(p, QMatrix)]
    kinds = " + ".join(sorted({m.name for m in mats}))
    return NativeWeights(meta, layers, config.hidden_size, kv * head_dim, head.rows, max_positions, embed, head,
                         kinds, sum(m.nbytes for m in mats), [cos, sin, *parts.values()], parts)


def inv_freq(config) -> tuple[torch.Tensor, float]:
    """(inv_freq [head_dim / 2] float32, attention scaling) as the family's rotary module computes them at init."""
    rope = getattr(config, "rope_parameters", None) or {}
    kind = rope.get("rope_type", "default")
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    if kind == "default":
        return 1.0 / (rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.float) / dim)), 1.0
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    freq, scaling = ROPE_INIT_FUNCTIONS[kind](config)
    return freq.float(), float(scaling)


def rotary_tables(config, head_dim: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """cos, sin [positions, head_dim / 2] as transformers computes them (its inv_freq and attention scaling)."""
    positions = min(int(getattr(config, "max_position_embeddings", 4096) or 4096), MAX_TABLE)
    freq, scaling = inv_freq(config)
    freqs = torch.arange(positions, dtype=torch.float32)[:, None] * freq[None, : head_dim // 2]
    return (freqs.cos() * scaling).contiguous(), (freqs.sin() * scaling).contiguous(), positions


class _GgufBlocks:
    """A GGUF file's Q4_1 and Q8_0 tensors, each checked against the floats transformers dequantised from it."""

    def __init__(self, path: Path, config, floats: ModuleFloats | SafetensorsFloats) -> None:
        self.index = GgufIndex(path)
        self.floats = floats
        self.permute = config.model_type in PERMUTED
        self.heads, self.kv = config.num_attention_heads, config.num_key_value_heads

    def matrix(self, name: str, float_name: str) -> QMatrix | None:
        info = self.index.tensors.get(name)
        if info is None or info.kind not in ("Q4_1", "Q8_0"):
            return None
        raw = self.index.rows(name)
        rows, k = raw.shape[0], info.shape[0]
        order = None
        if self.permute and name.endswith(("attn_q.weight", "attn_k.weight")):
            heads = self.heads if name.endswith("attn_q.weight") else self.kv
            order = _reverse_permutation(rows, heads).numpy()
        # transformers dequantised this file into the floats: sampled rows of the blocks must hold exactly those
        # numbers (the whole matrix took a second a load; a wrong row order or layout fails every sample)
        sample, expected = self.floats.sample(float_name, rows)
        picked = sample if order is None else order[sample]
        check = blocks.from_gguf_blocks(info.kind, raw[picked], k).dequantize()
        if check.shape != expected.shape or not torch.allclose(check, expected, rtol=1e-6, atol=1e-7):
            return None
        return blocks.from_gguf_blocks(info.kind, raw, k, order)


def _reverse_permutation(rows: int, heads: int) -> torch.Tensor:
    """The row order transformers' reverse_permute_weights gives llama.cpp's q/k rows (new row i = old row)."""
    dim = rows // heads // 2
    if heads * 2 * dim != rows:
        return torch.arange(rows)
    return torch.arange(rows).reshape(heads, dim, 2).transpose(1, 2).reshape(rows)
