"""A tiny llama GGUF (F32 tensors, byte-level BPE vocabulary) that transformers' GGUF loader accepts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from gguf import GGUFWriter, TokenType

TOKENS = ["<s>", "</s>", "<unk>"] + list("abcdefghijklmnopqrstuvwxyz.,!?") + ["Ġ"]
HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 32, 64, 4, 2, 2


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    head_dim = HIDDEN // HEADS
    w = GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_context_length(256)
    w.add_embedding_length(HIDDEN)
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
        w.add_tensor(name, (rng.standard_normal(shape) * 0.2).astype(np.float32))

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
