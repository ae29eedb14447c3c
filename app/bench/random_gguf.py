"""GGUFs of a real model's shape with random blocks, written on the spot (nothing downloaded): what the bench
prices a real pair on (`speclens bench --large-target`) and what llama.cpp reads beside SpecLens.

The blocks are random codes with small float16 scales (the gguf package quantizes no K type); the tokenizer
is the embedded model's, copied from its file, so the embedded model drafts for the random target and
llama.cpp opens the file. Tensors are written one at a time, so writing a 7B-shaped file holds one tensor.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

SHAPES = {  # transformers' names; the vocabulary is the embedded model's (49,152)
    "1.7B": {"hidden": 2048, "ffn": 8192, "layers": 24, "heads": 32, "kv_heads": 32},  # SmolLM2-1.7B
    "7B": {"hidden": 4096, "ffn": 11008, "layers": 32, "heads": 32, "kv_heads": 32},  # Llama-2-7B
}
BLOCK_BYTES = {"Q4_K": 144, "Q5_K": 176, "Q6_K": 210, "Q8_0": 34}
VALUES = {"Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "Q8_0": 32}


def random_blocks(kind: str, rows: int, k: int, rng: np.random.Generator, scale: float = 0.02) -> np.ndarray:
    """[rows, k / values x bytes] valid blocks: random codes and scales, float16 d (and dmin) near `scale`."""
    units = k // VALUES[kind]
    b = rng.integers(0, 256, (rows, units, BLOCK_BYTES[kind]), dtype=np.uint8)
    d = (rng.random((rows, units)) * scale / 32 + scale / 64).astype(np.float16)
    at = {"Q6_K": 208, "Q8_0": 0}.get(kind, 0)
    b[..., at : at + 2] = d.view(np.uint8).reshape(rows, units, 2)
    if kind in ("Q4_K", "Q5_K"):
        b[..., 2:4] = (d * 2).view(np.uint8).reshape(rows, units, 2)  # dmin: the mins centre the codes
    return b.reshape(rows, -1)


def tensors(shape: dict, vocab: int, types: dict[str, str]) -> list[tuple[str, tuple[int, int], str]]:
    """(name, (rows, k), type) in file order; a name's type: the first key of `types` in it, else "default"."""
    h, f, heads, kv = shape["hidden"], shape["ffn"], shape["heads"], shape["kv_heads"]
    head_dim = h // heads

    def kind(name: str) -> str:
        return next((t for key, t in types.items() if key != "default" and key in name), types["default"])

    out = [("token_embd.weight", (vocab, h), kind("token_embd"))]
    for i in range(shape["layers"]):
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", (1, h), "F32"), (b + "attn_q.weight", (heads * head_dim, h), kind("attn_q")),
                (b + "attn_k.weight", (kv * head_dim, h), kind("attn_k")),
                (b + "attn_v.weight", (kv * head_dim, h), kind("attn_v")),
                (b + "attn_output.weight", (h, heads * head_dim), kind("attn_output")),
                (b + "ffn_norm.weight", (1, h), "F32"), (b + "ffn_gate.weight", (f, h), kind("ffn_gate")),
                (b + "ffn_up.weight", (f, h), kind("ffn_up")), (b + "ffn_down.weight", (h, f), kind("ffn_down"))]
    return out + [("output_norm.weight", (1, h), "F32"), ("output.weight", (vocab, h), kind("output"))]


def write(path: Path, shape: dict, tokenizer_from: Path, types: dict[str, str] | None = None, seed: int = 0) -> Path:
    """A llama GGUF of `shape` with random blocks (default Q4_K, as `--large-target` prices it) and the
    tokenizer of the GGUF `tokenizer_from`."""
    from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter

    types = types or {"default": "Q4_K"}
    source = GGUFReader(str(tokenizer_from))
    vocab = len(source.fields["tokenizer.ggml.tokens"].data)
    w = GGUFWriter(str(path), "llama")
    h, heads = shape["hidden"], shape["heads"]
    w.add_name("random-" + "x".join(str(shape[k]) for k in ("hidden", "layers")))
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_feed_forward_length(shape["ffn"])
    w.add_block_count(shape["layers"])
    w.add_head_count(heads)
    w.add_head_count_kv(shape["kv_heads"])
    w.add_rope_dimension_count(h // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    for key, field in source.fields.items():
        if not key.startswith("tokenizer."):
            continue
        value, vtype = field.contents(), field.types[0]
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        w.add_key_value(key, value, vtype, sub)
    plan = tensors(shape, vocab, types)
    for name, (rows, k), kind in plan:
        if kind == "F32":
            w.add_tensor_info(name, (k,), np.dtype(np.float32), 4 * k)
        else:
            nbytes = rows * k // VALUES[kind] * BLOCK_BYTES[kind]
            w.add_tensor_info(name, (rows, k // VALUES[kind] * BLOCK_BYTES[kind]), np.dtype(np.uint8), nbytes,
                              raw_dtype=GGMLQuantizationType[kind])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for _, (rows, k), kind in plan:
        if kind == "F32":
            w.write_tensor_data((1 + rng.standard_normal(k) * 0.1).astype(np.float32))
        else:
            w.write_tensor_data(random_blocks(kind, rows, k, rng))
    w.close()
    return path
