"""The feature draft's file format: its config (the network's shape) and the fingerprint of the target it fits.

Plain data and a hash over the target's embedding; the network is in feature_net, the drafter in
feature_drafter.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field

import torch

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


HASHED_ROWS = 8192  # rows a hash step reads: 50 MB of float32 at a 1,536-wide embedding


def fingerprint(target) -> dict:
    """What a draft must match: architecture, hidden size, vocabulary rows and a hash of the embedding.

    The hash is over the embedding in bfloat16, so the same weights loaded in float32 or bfloat16 agree. It
    reads the rows a block at a time, through the embedding's own `lookup` where it has one (a native model's
    rows, dequantised on demand): the whole float matrix at once held 0.9 GB for Qwen2.5's 151,936 rows, and its
    bfloat16 copy and bytes another 0.9 GB at the peak, in every launch whose auto looked for a trained draft.
    """
    c = target.config.get_text_config()
    embeddings = target.get_input_embeddings()
    lookup = getattr(embeddings, "lookup", None)
    rows = int(getattr(embeddings, "num_embeddings", None) or embeddings.weight.shape[0])
    digest = hashlib.sha256()
    for start in range(0, rows, HASHED_ROWS):
        stop = min(start + HASHED_ROWS, rows)
        block = lookup(torch.arange(start, stop)) if lookup is not None else embeddings.weight.detach()[start:stop]
        digest.update(block.to("cpu", torch.bfloat16).contiguous().view(torch.int16).numpy())
    arch = (getattr(target.config, "architectures", None) or [type(target).__name__])[0]
    return {"architecture": arch, "hidden_size": int(c.hidden_size), "vocab_rows": rows,
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
