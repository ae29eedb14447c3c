"""SpecLens's native decode step: a Llama-family model's whole pass in one C call (kernel.c), on the
GGUF's own 4-bit blocks (or 8-bit blocks made from float weights).

`kernel()` is the best build this CPU runs (AVX-512 VNNI, AVX2, generic C), or None; `unavailable()`
says why in one line. The model side is build.py (weights), backend.py (the engine's CacheBackend) and
quality.py (its quality against the model as transformers loads it).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

BUILDS = ("_kernel_avx512", "_kernel_avx2", "_kernel_generic")  # best first


@cache
def _load() -> tuple[ModuleType | None, str | None]:
    missing = []
    for name in BUILDS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            missing.append(name)
            continue
        if module.cpu_ok():
            return module, None
    if len(missing) == len(BUILDS):
        return None, "the native kernel was not built (no C compiler at install: pip install -e . with gcc or clang)"
    return None, "this CPU lacks the instructions every native build needs"


def kernel() -> ModuleType | None:
    return _load()[0]


@cache
def build_id() -> str:
    """The running build, for cache keys: its instruction set and a hash of its file, so timings taken
    with an older kernel are never reused for a newer one ("" when none runs)."""
    module = kernel()
    if module is None:
        return ""
    import hashlib
    from pathlib import Path

    return f"{module.isa()} {hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]}"


def unavailable() -> str | None:
    """None when a native build runs here, else why not (one line)."""
    return _load()[1]
