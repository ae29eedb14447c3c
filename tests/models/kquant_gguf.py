"""GGUFs of random K-quant blocks (and GGML's small Q4_0, Q5_0, Q5_1 blocks) written on the spot (the gguf
package quantizes no K type, so the blocks are random bytes with small float16 scales): a Llama- or Qwen-shaped model whose every matrix is in the
block type asked for, for the native path's tests against gguf's own dequantiser and transformers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, TokenType
from tiny_gguf import TOKENS

BYTES = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210, "Q4_0": 18, "Q5_0": 22, "Q5_1": 24}
UNIT = {"Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "Q4_0": 32, "Q5_0": 32, "Q5_1": 32}


def random_blocks(kind: str, rows: int, k: int, rng: np.random.Generator, scale: float = 0.02) -> np.ndarray:
    """[rows, k / unit * bytes] of valid blocks: random codes and scales, float16 d (and dmin) near `scale`."""
    units = k // UNIT[kind]
    b = rng.integers(0, 256, (rows, units, BYTES[kind]), dtype=np.uint8)
    d = (rng.random((rows, units)) * scale / 32 + scale / 64).astype(np.float16)
    if kind in ("Q4_0", "Q5_0"):
        b[..., 0:2] = d.view(np.uint8).reshape(rows, units, 2)
    elif kind == "Q5_1":  # m near -16 d: centres the codes, with some spread
        m = (-d.astype(np.float32) * rng.uniform(12, 20, (rows, units))).astype(np.float16)
        b[..., 0:2], b[..., 2:4] = d.view(np.uint8).reshape(rows, units, 2), m.view(np.uint8).reshape(rows, units, 2)
    elif kind == "Q6_K":
        b[..., 208:210] = d.view(np.uint8).reshape(rows, units, 2)
    else:
        b[..., 0:2] = d.view(np.uint8).reshape(rows, units, 2)
        b[..., 2:4] = (d * 2).view(np.uint8).reshape(rows, units, 2)  # dmin: mins centre the codes
    return b.reshape(rows, -1)


def write_kquant_gguf(path: Path, types: dict[str, str] | str = "Q4_K", *, arch: str = "llama", hidden: int = 256,
                      heads: int = 4, kv_heads: int = 2, ffn: int = 512, layers: int = 2, head_dim: int | None = None,
                      seed: int = 0) -> Path:
    """types: one type for every matrix, or {tensor name suffix ("attn_v", "ffn_down", "output"...): type}
    with "default" for the rest (a Q4_K_M-like mix: {"default": "Q4_K", "attn_v": "Q6_K", "ffn_down": "Q6_K"})."""
    rng = np.random.default_rng(seed)
    mix = {"default": types} if isinstance(types, str) else types
    head_dim = head_dim or hidden // heads
    w = GGUFWriter(str(path), arch)
    w.add_name(f"random-{arch}")
    w.add_context_length(512)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_block_count(layers)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(TOKENS)
    w.add_token_types([TokenType.CONTROL] * 3 + [TokenType.NORMAL] * (len(TOKENS) - 3))
    w.add_token_scores([0.0] * len(TOKENS))
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_unk_token_id(2)
    vocab = len(TOKENS)

    def matrix(name: str, rows: int, k: int) -> None:
        kind = next((t for key, t in mix.items() if key != "default" and key in name), mix["default"])
        if k % UNIT.get(kind, 1):
            kind = "F32"
        if kind == "F32":
            w.add_tensor(name, (rng.standard_normal((rows, k)) * 0.05).astype(np.float32))
            return
        raw = random_blocks(kind, rows, k, rng)
        w.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=GGMLQuantizationType[kind])

    def vector(name: str, n: int) -> None:
        w.add_tensor(name, (1 + rng.standard_normal(n) * 0.1).astype(np.float32))

    matrix("token_embd.weight", vocab, hidden)
    for i in range(layers):
        vector(f"blk.{i}.attn_norm.weight", hidden)
        matrix(f"blk.{i}.attn_q.weight", heads * head_dim, hidden)
        matrix(f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden)
        matrix(f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden)
        if arch == "qwen2":  # Qwen2's q/k/v carry biases
            for x, rows in (("q", heads * head_dim), ("k", kv_heads * head_dim), ("v", kv_heads * head_dim)):
                w.add_tensor(f"blk.{i}.attn_{x}.bias", (rng.standard_normal(rows) * 0.1).astype(np.float32))
        if arch == "qwen3":
            vector(f"blk.{i}.attn_q_norm.weight", head_dim)
            vector(f"blk.{i}.attn_k_norm.weight", head_dim)
        matrix(f"blk.{i}.attn_output.weight", hidden, heads * head_dim)
        vector(f"blk.{i}.ffn_norm.weight", hidden)
        matrix(f"blk.{i}.ffn_gate.weight", ffn, hidden)
        matrix(f"blk.{i}.ffn_up.weight", ffn, hidden)
        matrix(f"blk.{i}.ffn_down.weight", hidden, ffn)
    vector("output_norm.weight", hidden)
    matrix("output.weight", vocab, hidden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
