"""SpecLens's native decode step: a Llama-family model's whole pass in one C call (kernel.c), on the
GGUF's own 4-bit blocks (or 8-bit blocks made from float weights).

`active_build()` is the best build this CPU runs (AVX-512 VNNI, AVX2; NEON with the dot product and i8mm, NEON
with the dot product; generic C), or None; `unavailable()` says why in one line. SPECLENS_NATIVE_BUILD
(avx512, avx2, i8mm, neon or generic) runs one build instead, so every build can be tested and compared on one machine. `builds()` lists every build that runs here.
The model side is descriptor.py (dimensions and the kernel's fields), build.py (weights), backend.py
(the engine's CacheBackend) and quality.py (its quality against the model as transformers loads it).
"""

from __future__ import annotations

import importlib
import os
import platform
import sys
from functools import cache
from types import ModuleType

BUILDS = ("_kernel_avx512", "_kernel_avx2", "_kernel_i8mm", "_kernel_neon", "_kernel_generic")  # best first (x86's, arm64's, either's)
FORCE = "SPECLENS_NATIVE_BUILD"


@cache
def _runnable() -> tuple[dict[str, ModuleType], dict[str, str]]:
    """({build: module} for every build that runs here, {build: why not} for the rest)."""
    from app.native.descriptor import layout_mismatch

    ok: dict[str, ModuleType] = {}
    why: dict[str, str] = {}
    for name in BUILDS:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ImportError:
            why[name] = "not built"
            continue
        if not module.cpu_ok():
            why[name] = "this CPU lacks its instructions"
        elif (mismatch := layout_mismatch(module)) is not None:
            why[name] = mismatch
        else:
            ok[name] = module
    return ok, why


def builds() -> list[ModuleType]:
    """Every build that runs on this CPU, best first."""
    return list(_runnable()[0].values())


@cache
def _load() -> tuple[ModuleType | None, str | None]:
    ok, why = _runnable()
    forced = os.environ.get(FORCE, "").strip().lower()
    if forced:
        name = f"_kernel_{forced}"
        if name not in BUILDS:
            return None, f"{FORCE}={forced} names no build (avx512, avx2, i8mm, neon or generic)"
        return (ok[name], None) if name in ok else (None, f"the {forced} native build: {why[name]}")
    if ok:
        return next(iter(ok.values())), None
    if all(reason == "not built" for reason in why.values()):
        return None, (f"the native kernel was not built for {platform_name()} (no C compiler at install: "
                      f"pip install -e . with {COMPILER_HINT.get(sys.platform, 'gcc or clang')}); SpecLens runs on torch")
    return None, next(reason for reason in why.values() if reason != "not built")


def active_build() -> ModuleType | None:
    return _load()[0]


# the compiler `pip install` needs where the native kernel did not build (README, "What each platform gets")
COMPILER_HINT = {"win32": "the Visual Studio Build Tools 2022 (MSVC)", "darwin": "the Xcode command line tools"}


def platform_name() -> str:
    """This machine for people: "Linux x86-64", "Windows x86-64", "macOS arm64"."""
    system = {"win32": "Windows", "darwin": "macOS"}.get(sys.platform, sys.platform.capitalize())
    machine = platform.machine().lower()
    arch = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "arm64", "arm64": "arm64"}.get(machine, machine)
    return f"{system} {arch}"


def build_label(module: ModuleType) -> str:
    """A build for people, its instructions and platform: "AVX2, Linux x86-64", "generic C, macOS arm64"."""
    return f"{module.isa()}, {platform_name()}"


@cache
def build_id() -> str:
    """The running build, for cache keys: its instruction set and a hash of its file, so timings taken
    with an older kernel are never reused for a newer one ("" when none runs)."""
    module = active_build()
    if module is None:
        return ""
    import hashlib
    from pathlib import Path

    return f"{module.isa()} {hashlib.sha256(Path(module.__file__).read_bytes()).hexdigest()[:16]}"


def unavailable() -> str | None:
    """None when a native build runs here, else why not (one line)."""
    return _load()[1]


_threads: int | None = None


def thread_count() -> int:
    """The kernel's thread count: the one a load chose for it (set_threads), else torch's."""
    if _threads is not None:
        return _threads
    import torch

    return torch.get_num_threads()


def set_threads(count: int | None) -> None:
    """The kernel's own thread count (None: follow torch's). Apart from torch's: on the native path torch
    runs only a round's vocabulary work, whose OpenMP workers, woken between passes, cost the next pass
    1.2 ms of its 4.7 (docs/native-kernels.md), so threads.choose_threads gives torch one thread there."""
    global _threads
    _threads = count
