"""A tiny llama GGUF (F32 or Q8_0 tensors, byte-level BPE vocabulary) that transformers' GGUF loader accepts;
its keywords make the variants the malformed-input campaign (tests/models/malformed.py) starts from."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter, TokenType

TOKENS = ["<s>", "</s>", "<unk>"] + list("abcdefghijklmnopqrstuvwxyz.,!?") + ["Ġ"]
HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 32, 64, 4, 2, 2


def write_tiny_gguf(path: Path, seed: int = 0, *, q8_0: bool = False, alignment: int | None = None,
                    drop: tuple[str, ...] = (), arch: str = "llama", embedding_length: int = HIDDEN,
                    nan_scale: str | None = None) -> Path:
    """q8_0: the matrices as Q8_0 blocks; alignment: written as general.alignment; drop: tensors left out;
    embedding_length: what the metadata claims (the tensors stay HIDDEN wide); nan_scale: a Q8_0 tensor one of
    whose block scales is NaN."""
    from gguf.quants import quantize

    rng = np.random.default_rng(seed)
    head_dim = HIDDEN // HEADS
    w = GGUFWriter(str(path), arch)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_name("tiny-llama")
    w.add_context_length(256)
    w.add_embedding_length(embedding_length)
    w.add_feed_forward_length(FFN)
    w.add_block_count(LAYERS)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(head_dim)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(TOKENS)
    w.add_token_types([TokenType.CONTROL] * 3 + [TokenType.NORMAL] * (len(TOKENS) - 3))
    w.add_token_scores([0.0] * len(TOKENS))  # no merges: transformers derives them from the scores
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_unk_token_id(2)

    def tensor(name, *shape):
        values = (rng.standard_normal(shape) * 0.2).astype(np.float32)
        if name in drop:
            return
        if (q8_0 or name == nan_scale) and len(shape) == 2:
            blocks = quantize(values, GGMLQuantizationType.Q8_0)
            if name == nan_scale:
                blocks[0, 0:2] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)  # the first block's d
            w.add_tensor(name, blocks, raw_shape=blocks.shape, raw_dtype=GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, values)

    tensor("token_embd.weight", len(TOKENS), HIDDEN)
    for i in range(LAYERS):
        tensor(f"blk.{i}.attn_norm.weight", HIDDEN)
        tensor(f"blk.{i}.attn_q.weight", HIDDEN, HIDDEN)
        tensor(f"blk.{i}.attn_k.weight", KV_HEADS * head_dim, HIDDEN)
        tensor(f"blk.{i}.attn_v.weight", KV_HEADS * head_dim, HIDDEN)
        tensor(f"blk.{i}.attn_output.weight", HIDDEN, HIDDEN)
        tensor(f"blk.{i}.ffn_norm.weight", HIDDEN)
        tensor(f"blk.{i}.ffn_gate.weight", FFN, HIDDEN)
        tensor(f"blk.{i}.ffn_up.weight", FFN, HIDDEN)
        tensor(f"blk.{i}.ffn_down.weight", HIDDEN, FFN)
    tensor("output_norm.weight", HIDDEN)
    tensor("output.weight", len(TOKENS), HIDDEN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
