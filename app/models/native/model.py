"""A transformers model on the native path: it keeps its module (config, tokenizer-facing parts, the
embedding and head rows a feature draft reads) and gains `speclens_backend`, through which the engine
makes every call (kv.backend_for), so each pass is one kernel call on the GGUF's own blocks."""

from __future__ import annotations

from torch import nn

from .backend import NativeBackend
from .build import from_transformers


def attach(model: nn.Module) -> nn.Module:
    """The model, its passes from now on native (in place). A GGUF's blocks are read from the file it was
    loaded from (`speclens_gguf`, set by loading), else its float weights become Q8_0."""
    if is_native(model):
        return model  # a light native model (light.py) is native from the start
    weights = from_transformers(model, getattr(model, "speclens_gguf", None))
    model.speclens_backend = NativeBackend(weights)
    model.speclens_kernels = f"{weights.kinds} · native"
    return model


def is_native(model: nn.Module) -> bool:
    return isinstance(getattr(model, "speclens_backend", None), NativeBackend)
