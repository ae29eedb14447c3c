"""A GGUF file's own model dimensions (its metadata and tensor shapes), and whether a config describes that
file: the converted copy's config.json is a cache, editable by anyone, and a config that disagrees with
the file it claims to describe would run the file's weights as another model (garbage, or worse)."""

from __future__ import annotations

import math
from pathlib import Path

from app.native.gguf.index import GgufIndex

EPS_RTOL = 1e-4
WHOLE_HEAD_ROTARY = ("llama", "mistral", "qwen2")  # config.json writes floats in decimal: a float32 epsilon reads back within this


def file_dims(index: GgufIndex) -> dict[str, float | int]:
    """What the file itself says of the fields the kernel reads, by transformers' config names (a field the
    file does not hold is left out)."""
    arch = index.values.get("general.architecture")
    meta = {} if not isinstance(arch, str) else {
        "num_hidden_layers": f"{arch}.block_count", "hidden_size": f"{arch}.embedding_length",
        "intermediate_size": f"{arch}.feed_forward_length", "num_attention_heads": f"{arch}.attention.head_count",
        "num_key_value_heads": f"{arch}.attention.head_count_kv", "head_dim": f"{arch}.attention.key_length",
        "rms_norm_eps": f"{arch}.attention.layer_norm_rms_epsilon", "rope_theta": f"{arch}.rope.freq_base"}
    dims: dict[str, float | int] = {name: value for name, key in meta.items()
                                    if isinstance(value := index.values.get(key), int | float)}
    rotary = index.values.get(f"{arch}.rope.dimension_count")
    if "head_dim" not in dims and isinstance(rotary, int) and arch in WHOLE_HEAD_ROTARY:
        dims["head_dim"] = rotary  # these families rotate whole heads: the rotary width is the head's
    tensors = index.tensors
    embed = tensors.get("token_embd.weight")
    if embed is not None and len(embed.shape) == 2:
        dims["hidden_size"], dims["vocab_size"] = embed.shape
    layers = {name.split(".")[1] for name in tensors if name.startswith("blk.")}
    if layers:
        dims["num_hidden_layers"] = len(layers)
    gate = tensors.get("blk.0.ffn_gate.weight")
    if gate is not None and len(gate.shape) == 2:
        dims["intermediate_size"] = gate.shape[1]
    return dims


def config_dims(config) -> dict[str, float | int | None]:
    text = config.get_text_config()
    rope = getattr(text, "rope_parameters", None) or {}
    heads = getattr(text, "num_attention_heads", None)
    return {"num_hidden_layers": getattr(text, "num_hidden_layers", None),
            "hidden_size": getattr(text, "hidden_size", None),
            "intermediate_size": getattr(text, "intermediate_size", None),
            "num_attention_heads": heads,
            "num_key_value_heads": getattr(text, "num_key_value_heads", None) or heads,
            "head_dim": getattr(text, "head_dim", None) or (text.hidden_size // heads if heads else None),
            "rms_norm_eps": getattr(text, "rms_norm_eps", None),
            "rope_theta": rope.get("rope_theta", getattr(text, "rope_theta", None)) if isinstance(rope, dict) else None,
            "vocab_size": getattr(text, "vocab_size", None)}


def mismatch(config, gguf: Path) -> str | None:
    """None when the config describes `gguf` (every field the file holds agrees), else the first that does not."""
    theirs = file_dims(GgufIndex(gguf))
    ours = config_dims(config)
    for name, value in theirs.items():
        mine = ours.get(name)
        same = (isinstance(mine, int | float) and math.isclose(float(mine), float(value), rel_tol=EPS_RTOL)
                if isinstance(value, float) else mine == value)
        if not same:
            return f"its config says {name} {mine}, the file {value}"
    return None
