"""The cross-build check's inputs (tests/native/test_cross.py): small odd-shaped models in every block type
the kernel reads, written to one binary file that the C harness (harness.c) reads on every platform.

The models are made by SpecLens's own packing code (blocks.from_gguf_blocks, kquants, build.model_fields) from
GGUF blocks drawn from a fixed seed, so the records the harness multiplies are the ones the app makes: one
packing code path, and the harness stays a reader. The file is little-endian (every platform checked is)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaConfig

from app.native import blocks, kquants, q5
from app.native.build import model_fields
from app.native.descriptor import Digits

MAGIC = b"SLX1"
FILE_BYTES = {"Q4_1": 20, "Q8_0": 34, **{name: kquants.FILE_BYTES[kind] for kind, name in kquants.NAMES.items()},
              **{name: q5.FILE_BYTES[kind] for kind, name in q5.NAMES.items()}}
UNIT = {"Q4_1": 32, "Q8_0": 32, "Q4_0": 32, "Q5_0": 32, "Q5_1": 32, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256}

# name: (hidden, heads, kv heads, head_dim, ffn, vocab, layers, q/k/v types, gate/up types, down type a layer,
#        o, embed, head, digits, bias and q/k norms)
CASES = {
    "narrow-attention": (64, 2, 1, 16, 256, 77, 3, ("Q4_1", "Q8_0", "Q4_1"), ("Q4_1", "Q4_1"),
                         ("Q4_K", "Q5_K", "Q6_K"), "Q8_0", "Q8_0", "Q4_1", Digits(), False),
    "head-dim-24": (64, 4, 2, 24, 256, 83, 3, ("Q8_0", "Q8_0", "Q8_0"), ("Q8_0", "Q4_1"),
                    ("Q6_K", "Q4_K", "Q5_K"), "Q4_1", "Q4_1", "Q8_0", Digits(qkv=1, o=2, gate_up=1, down=1, head=2),
                    True),
    "small-blocks": (96, 3, 1, 32, 160, 71, 3, ("Q5_0", "Q4_0", "Q5_1"), ("Q5_0", "Q5_1"),
                     ("Q5_1", "Q4_0", "Q5_0"), "Q5_0", "Q4_0", "Q5_0", Digits(qkv=1, o=2, gate_up=2, down=1, head=1),
                     False),
}
PROMPT, GREEDY = 11, 6


def _f16(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint8).reshape(*values.shape, 2)


def gguf_blocks(kind: str, rows: int, k: int, rng: np.random.Generator) -> blocks.QMatrix:
    """rows x k weights as a GGUF holds them in `kind` (random codes, scales of a trained model's size)."""
    units = k // UNIT[kind]
    raw = rng.integers(0, 256, (rows, units, FILE_BYTES[kind]), dtype=np.uint8)
    scale = lambda lo, hi: _f16(rng.uniform(lo, hi, (rows, units)).astype(np.float32))  # noqa: E731
    if kind == "Q4_1":
        d = rng.uniform(0.004, 0.012, (rows, units)).astype(np.float32)
        raw[..., 0:2], raw[..., 2:4] = _f16(d), _f16(-7.5 * d)
    elif kind == "Q8_0":
        raw[..., 0:2] = scale(0.0005, 0.0012)
    elif kind in ("Q4_0", "Q5_0"):  # w = d (q - 8) or d (q - 16)
        raw[..., 0:2] = scale(0.004, 0.012) if kind == "Q5_0" else scale(0.008, 0.024)
    elif kind == "Q5_1":  # w = d q + m, m near -16 d
        d = rng.uniform(0.004, 0.012, (rows, units)).astype(np.float32)
        raw[..., 0:2], raw[..., 2:4] = _f16(d), _f16(-15.5 * d)
    elif kind in ("Q4_K", "Q5_K"):
        raw[..., 0:2], raw[..., 2:4] = scale(0.0002, 0.0004), scale(0.0001, 0.0003)
    else:  # Q6_K: d at the end, int8 scales before it
        raw[..., 192:208] = rng.integers(-40, 40, (rows, units, 16)).astype(np.int8).view(np.uint8)
        raw[..., 208:210] = scale(0.00005, 0.0001)
    return blocks.from_gguf_blocks(kind, raw.reshape(rows, -1), k)


class _Matrix(tuple):
    """A matrix's arguments (kind, n, k, digits, records)."""

    def __new__(cls, *fields):
        return super().__new__(cls, fields)


class _Capture:
    """A stand-in for a kernel build: model_fields hands its Matrix and Model their arguments."""

    __name__ = "capture"

    @staticmethod
    def Matrix(kind, n, k, data, digits):  # noqa: N802
        return _Matrix(int(kind), int(n), int(k), int(digits), np.ascontiguousarray(data, np.uint8))

    @staticmethod
    def Model(**fields):  # noqa: N802
        return fields


def case_fields(name: str, seed: int) -> dict:
    """build.Model's keywords for one case, as the app makes them."""
    (hidden, heads, kv, hd, ffn, vocab, layers, qkv_kinds, gu_kinds, downs, o_kind, embed_kind, head_kind, digits,
     extras) = CASES[name]
    rng = np.random.default_rng(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd, max_position_embeddings=64)
    norm = lambda n: torch.from_numpy(rng.uniform(0.8, 1.2, n).astype(np.float32))  # noqa: E731
    parts: dict = {}
    for i in range(layers):
        widths = (heads * hd, kv * hd, kv * hd)
        parts[f"{i}.qkv"] = blocks.stack([gguf_blocks(t, w, hidden, rng) for t, w in zip(qkv_kinds, widths, strict=True)])
        parts[f"{i}.o"] = gguf_blocks(o_kind, hidden, heads * hd, rng)
        parts[f"{i}.gate_up"] = blocks.stack([gguf_blocks(t, ffn, hidden, rng) for t in gu_kinds])
        parts[f"{i}.down"] = gguf_blocks(downs[i], hidden, ffn, rng)
        parts[f"{i}.attn_norm"], parts[f"{i}.mlp_norm"] = norm(hidden), norm(hidden)
        if extras:
            parts[f"{i}.qkv_bias"] = torch.from_numpy(rng.normal(0, 0.02, sum(widths)).astype(np.float32))
            parts[f"{i}.q_norm"], parts[f"{i}.k_norm"] = norm(hd), norm(hd)
    parts["embed"] = gguf_blocks(embed_kind, vocab, hidden, rng)
    parts["head"] = gguf_blocks(head_kind, vocab, hidden, rng)
    parts["norm"] = norm(hidden)
    return model_fields(config, parts, _Capture, digits)


def _vec(v) -> bytes:
    if v is None:
        return struct.pack("<q", 0)
    a = np.ascontiguousarray(v, np.float32).ravel()
    return struct.pack("<q", a.size) + a.astype("<f4").tobytes()


def _mat(m) -> bytes:
    kind, n, k, digits, data = m
    return struct.pack("<qqqqq", kind, n, k, digits, data.nbytes) + data.tobytes()


def _proj(p) -> bytes:
    parts = (p,) if isinstance(p, _Matrix) else p
    return struct.pack("<q", len(parts)) + b"".join(_mat(m) for m in parts)


def write(path: Path, seed: int = 7) -> Path:
    """Every case, with its prompt, to `path`."""
    out = [MAGIC, struct.pack("<i", len(CASES))]
    for i, name in enumerate(CASES):
        f = case_fields(name, seed + i)
        prompt = np.random.default_rng(seed + 100 + i).integers(0, f["vocab"], PROMPT)
        out += [name.encode().ljust(32, b"\0"),
                struct.pack("<8if", f["layers"], f["hidden"], f["heads"], f["kv_heads"], f["head_dim"], f["ffn"],
                            f["vocab"], f["max_positions"], f["eps"]),
                struct.pack(f"<ii{PROMPT}i", GREEDY, PROMPT, *prompt.tolist()),
                _vec(f["cos"]), _vec(f["sin"]), _vec(f["norm"]), _mat(f["embed"]), _mat(f["head"])]
        for y in f["parts"]:
            out += [_vec(y["attn_norm"]), _vec(y["qkv_bias"]), _vec(y["ffn_norm"]), _vec(y["q_norm"]),
                    _vec(y["k_norm"]), _proj(y["qkv"]), _mat(y["o"]), _proj(y["gate_up"]), _mat(y["down"])]
    path.write_bytes(b"".join(out))
    return path
