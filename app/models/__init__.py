"""Loading a checkpoint: a target or draft model with its tokenizer from a spec string, the embedded default,
devices and dtypes, progress. No Qt here.

The machine's timings live in app.machine, the native kernel in app.native, drafters and auto's choice in
app.drafting, and the errors every room raises in app.errors. Loading and devices need torch and transformers
and load on first use (PEP 562), so the window shows before those imports.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from app.models.embedded import DEFAULT_SPEC, embedded_gguf
from app.models.progress import LoadProgress, ProgressCallback

# Everything below needs torch and transformers (seconds of imports): loaded on first use, so the
# window shows first.
_LAZY = {
    "default_device": "devices", "default_dtype": "devices", "reduced_dtype": "devices",
    "LoadedModel": "loading", "load_model": "loading",
}

if TYPE_CHECKING:
    from app.models.devices import default_device, default_dtype, reduced_dtype
    from app.models.loading import LoadedModel, load_model


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # later lookups do not come here
    return value


__all__ = [
    "DEFAULT_SPEC",
    "LoadProgress",
    "LoadedModel",
    "ProgressCallback",
    "default_device",
    "default_dtype",
    "embedded_gguf",
    "load_model",
    "reduced_dtype",
]
