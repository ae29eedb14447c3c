"""A GGUF's native model read straight from the file: the config from its metadata, the kernel's records
from its blocks (Q4_1, Q8_0, Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K as they are; F32, F16 and BF16 matrices as Q8_0; other
types dequantised by the gguf package, then Q8_0), with no transformers model classes and no float copy of
the weights, so a first load's memory stays near the file's size. transformers' GGUF loader remains the
path for families the kernel lacks (descriptor.config_problem says which).

Every matrix is checked as it is laid out: sampled rows of the kernel's product against the same rows
dequantised by the gguf package and multiplied in float64 (`check_rows`), so a wrong row order, permutation
or layout never passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from app.native import blocks, kquants, q5
from app.native.blocks import QMatrix
from app.native.descriptor import Unfit
from app.native.gguf.index import GgufIndex

NATIVE_TYPES = ("Q4_1", "Q8_0", *q5.KINDS, *kquants.KINDS)
FLOAT_TYPES = {"F32": np.float32, "F16": np.float16}
CHECK_ROWS = 12  # sampled rows a matrix, checked against gguf's own dequantiser
CHECK_TOLERANCE = 2e-3  # the kernel's two-digit activations against float64, relative to the product's size


@dataclass(frozen=True)
class Family:
    model_type: str
    permuted: bool  # llama.cpp's converter reorders q and k rows (interleaved rotary): undone here
    qk_norm: bool = False  # per-head RMSNorm of q and k (Qwen3)


FAMILIES = {"llama": Family("llama", True), "qwen2": Family("qwen2", False), "qwen3": Family("qwen3", False, True)}


def family_of(index: GgufIndex) -> Family | None:
    arch = index.values.get("general.architecture")
    family = FAMILIES.get(arch) if isinstance(arch, str) else None
    name = str(index.values.get("general.name", "")).lower()
    if family is not None and arch == "llama" and "mistral" in name:
        return Family("mistral", True)
    return family


def config_of(index: GgufIndex):
    """transformers' config of the family, from the file's metadata and tensor shapes (Unfit: not a family the
    kernel runs, or metadata missing)."""
    from transformers import AutoConfig

    family = family_of(index)
    if family is None:
        raise Unfit(f"the native kernel reads GGUFs of {', '.join(FAMILIES)}, not {index.values.get('general.architecture')}")
    arch = index.values["general.architecture"]
    v = index.values

    def need(key: str):
        value = v.get(f"{arch}.{key}")
        if not isinstance(value, int | float):
            raise Unfit(f"{index.name} has no {arch}.{key}")
        return value

    embed = index.tensors.get("token_embd.weight")
    if embed is None or len(embed.shape) != 2:
        raise Unfit(f"{index.name} has no token_embd.weight matrix")
    heads = int(need("attention.head_count"))
    fields = {
        "num_hidden_layers": int(need("block_count")), "hidden_size": int(need("embedding_length")),
        "intermediate_size": int(need("feed_forward_length")), "num_attention_heads": heads,
        "num_key_value_heads": int(v.get(f"{arch}.attention.head_count_kv", heads)),
        "rms_norm_eps": float(need("attention.layer_norm_rms_epsilon")),
        "max_position_embeddings": int(v.get(f"{arch}.context_length", 4096)),
        "vocab_size": int(embed.shape[1]), "tie_word_embeddings": "output.weight" not in index.tensors,
        "rope_theta": float(v.get(f"{arch}.rope.freq_base", 10000.0)),
        "bos_token_id": v.get("tokenizer.ggml.bos_token_id"), "eos_token_id": v.get("tokenizer.ggml.eos_token_id"),
    }
    head_dim = v.get(f"{arch}.attention.key_length") or v.get(f"{arch}.rope.dimension_count")
    if isinstance(head_dim, int):
        fields["head_dim"] = head_dim
    config = AutoConfig.for_model(family.model_type, **fields)
    config.architectures = [{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                             "qwen3": "Qwen3ForCausalLM"}[family.model_type]]
    return config


def _matrix(index: GgufIndex, name: str, order: np.ndarray | None) -> QMatrix:
    """A 2-D tensor as the kernel's records: its own blocks where the kernel reads them, else Q8_0."""
    info = index.tensors.get(name)
    if info is None or len(info.shape) != 2:
        raise Unfit(f"{index.name} has no {name} matrix")
    k = info.shape[0]
    if info.kind in NATIVE_TYPES:
        return blocks.from_gguf_blocks(info.kind, index.rows(name), k, order)
    return blocks.from_float(torch.from_numpy(_floats(index, name, order)))


def _floats(index: GgufIndex, name: str, order: np.ndarray | None = None) -> np.ndarray:
    """The tensor as float32 [rows, k] (a 1-D tensor: [1, k]): gguf's own dequantiser for block types."""
    info = index.tensors[name]
    raw = index.rows(name)
    if raw is None:
        raise Unfit(f"{index.name}: {name} is of type {info.kind}, which no reader here knows")
    if order is not None:
        raw = raw[order]
    if info.kind in FLOAT_TYPES:
        return raw.view(FLOAT_TYPES[info.kind]).astype(np.float32)
    if info.kind == "BF16":
        return (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    return dequantize(np.ascontiguousarray(raw), GGMLQuantizationType[info.kind]).astype(np.float32)


def _vector(index: GgufIndex, name: str, length: int) -> torch.Tensor:
    if name not in index.tensors:
        raise Unfit(f"{index.name} has no {name}")
    x = _floats(index, name).reshape(-1)
    if x.size != length:
        raise Unfit(f"{index.name}: {name} holds {x.size} values, not {length}")
    return torch.from_numpy(np.ascontiguousarray(x))


def _reverse_permutation(rows: int, heads: int) -> np.ndarray:
    """The row order that undoes llama.cpp's q/k permutation (rotate-half layout, as transformers reads it)."""
    dim = rows // heads // 2
    if heads * 2 * dim != rows:
        return np.arange(rows)
    return np.arange(rows).reshape(heads, dim, 2).transpose(0, 2, 1).reshape(rows)


def parts_of(index: GgufIndex, config) -> dict:
    """The kernel's parts by name (as build.parts_of names them), every matrix checked (check_rows)."""
    family = family_of(index)
    text = config.get_text_config()
    heads, kv, hidden = text.num_attention_heads, text.num_key_value_heads, text.hidden_size
    head_dim = getattr(text, "head_dim", None) or hidden // heads
    parts: dict = {}
    for i in range(text.num_hidden_layers):
        b = f"blk.{i}."
        q_order = _reverse_permutation(heads * head_dim, heads) if family.permuted else None
        k_order = _reverse_permutation(kv * head_dim, kv) if family.permuted else None
        qkv = [_checked(index, b + "attn_q.weight", q_order), _checked(index, b + "attn_k.weight", k_order),
               _checked(index, b + "attn_v.weight", None)]
        parts[f"{i}.attn_norm"] = _vector(index, b + "attn_norm.weight", hidden)
        parts[f"{i}.qkv"] = blocks.stack(qkv)
        if b + "attn_q.bias" in index.tensors:
            parts[f"{i}.qkv_bias"] = torch.cat([_vector(index, b + "attn_q.bias", heads * head_dim),
                                               _vector(index, b + "attn_k.bias", kv * head_dim),
                                               _vector(index, b + "attn_v.bias", kv * head_dim)])
        if family.qk_norm:
            parts[f"{i}.q_norm"] = _vector(index, b + "attn_q_norm.weight", head_dim)
            parts[f"{i}.k_norm"] = _vector(index, b + "attn_k_norm.weight", head_dim)
        parts[f"{i}.o"] = _checked(index, b + "attn_output.weight", None)
        parts[f"{i}.mlp_norm"] = _vector(index, b + "ffn_norm.weight", hidden)
        parts[f"{i}.gate_up"] = blocks.stack([_checked(index, b + "ffn_gate.weight", None),
                                              _checked(index, b + "ffn_up.weight", None)])
        parts[f"{i}.down"] = _checked(index, b + "ffn_down.weight", None)
    parts["embed"] = _checked(index, "token_embd.weight", None)
    if "output.weight" in index.tensors:
        parts["head"] = _checked(index, "output.weight", None)
    parts["norm"] = _vector(index, "output_norm.weight", hidden)
    if "rope_freqs.weight" in index.tensors:  # Llama 3.x: each rotary frequency divided by its factor
        parts["rope_freqs"] = _vector(index, "rope_freqs.weight", head_dim // 2)
    return parts


def _checked(index: GgufIndex, name: str, order: np.ndarray | None) -> QMatrix:
    mat = _matrix(index, name, order)
    why = check_rows(mat, index, name, order)
    index.release(name)  # its records are made: the file's pages go back until something reads them again
    if why is not None:
        raise Unfit(why)
    return mat


def check_rows(mat: QMatrix, index: GgufIndex, name: str, order: np.ndarray | None, seed: int = 0) -> str | None:
    """None when sampled rows of the kernel's product equal the same rows dequantised by the gguf package and
    multiplied in float64 (to the two-digit activations' rounding), else what differs."""
    from app.native import active_build

    build = active_build()
    if build is None:
        return None
    rng = np.random.default_rng(seed)
    rows = np.unique(np.r_[rng.integers(0, mat.rows, CHECK_ROWS), mat.rows - 1])
    picked = np.arange(index.tensors[name].shape[1]) if order is None else order
    want = _floats(index, name, picked[rows])  # the gguf package's rows, in the kernel's order
    if not np.isfinite(want).all():
        from app.errors import CorruptModel

        raise CorruptModel(f"{index.name}: {name} holds NaN or infinity in its blocks")
    if index.tensors[name].kind not in NATIVE_TYPES:  # floats re-quantised to Q8_0: the product of those blocks,
        held = mat.dequantize()[torch.from_numpy(rows)].numpy()  # each within half a Q8_0 step of the file's
        if not np.abs(held - want).max() <= np.abs(want).max() / 254 * 1.01:
            return f"{name}'s Q8_0 records differ from the file's floats by more than half a step"
        want = held
    want = want.astype(np.float64)
    x = rng.standard_normal((3, mat.k)).astype(np.float32)
    out = np.empty((3, mat.n), np.float32)
    build.matmul(mat.native(build), x, out, 1)
    ref = x.astype(np.float64) @ want.T
    err = np.abs(out[:, rows] - ref).max() / max(np.abs(ref).max(), 1e-30)
    if not err <= CHECK_TOLERANCE:
        return f"{name}'s native product differs from its blocks dequantised by gguf ({err:.2g} of the largest)"
    return None


def load(gguf: Path, build=None, digits=None):
    """(config, parts) of a GGUF for the kernel (Unfit: a family or type it does not run)."""
    index = GgufIndex(gguf)
    config = config_of(index)
    from app.native.descriptor import config_problem

    why = config_problem(config)
    if why is not None:
        raise Unfit(why)
    return config, parts_of(index, config)
