"""The DIRECT route: the native model of a GGUF the kernel runs, read straight from the file (native/direct.py):
no transformers model classes, no float copy. A target of at most REFERENCE_WEIGHTS also loads transformers'
float32 model once, as the reference its activation digits are chosen against (a larger one: its own two-digit
pass, about 16-bit activations, no float copy); a draft takes the fastest digits and builds no reference (its precision changes only how often its tokens are accepted, never the output)."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from app.errors import UnsupportedArchitecture
from app.machine import profile as machine_profile
from app.machine import threads, torch_path
from app.models import memory
from app.models.checkpoint import inspect_gguf
from app.models.locate import Source
from app.models.plan import DRAFT_DIGITS, Loaded, LoadRequest, Route, RouteKind, Said
from app.models.progress import LoadProgress
from app.models.transformers_load import load_gguf
from app.native import conversion_cache

REFERENCE_WEIGHTS = 10**9  # up to this many, transformers' float32 model (4 bytes a weight) is the quality reference
# (above: the model's own two-digit pass is, quality.two_digit_reference)


def load_direct(request: LoadRequest, source: Source, route: Route, said: Said) -> Loaded | Route:
    """The native model, its profile and the cached one; or, where the kernel does not run the file or no
    variant passes the quality gate (and native was not forced), the TORCH route on torch's paths only."""
    from app.native import direct
    from app.native.descriptor import Digits, Unfit
    from app.native.model import with_digits

    path, report = source.path, request.progress
    info = inspect_gguf(path)
    try:
        index, config = direct.read(path)
    except Unfit as exc:
        if request.kernels == "native":
            raise UnsupportedArchitecture(f"--kernels native: {exc}") from exc
        return _torch_instead(str(exc))
    folder = conversion_cache.entry_dir(path) if request.use_cache else None
    report(LoadProgress("tokenizer", 0.05, "reading the tokenizer"))
    shared = conversion_cache.tokenizer_dir(index.tokenizer_key()) if folder is not None else None
    template = index.values.get("tokenizer.chat_template")
    tokenizer = direct.tokenizer_of(path, folder if folder is not None else _scratch(), said.notes, shared,
                                    template if isinstance(template, str) else None)
    key = machine_profile.key_of_fingerprint(direct.fingerprint(path), request.device, request.requested,
                                             request.kernels, draft=request.draft)
    stored = machine_profile.read(key) if request.use_cache else None
    reuse = machine_profile.Reuse(stored, remeasure=request.remeasure)
    report(LoadProgress("weights", 0.2, f"reading {path.name}'s blocks"))
    native = direct.build(path, index, config, folder, notes=said.notes)
    choice = reuse.part("kernels")
    if choice is None or not choice.path.native:
        choice = _digits(native, request, source, info.parameters, tokenizer)
        if isinstance(choice, str):
            return _torch_instead(choice)
    native = with_digits(native, Digits.of_code(choice.path.digits))
    if folder is not None:
        direct.keep(folder, native)
    report(LoadProgress("kernels", 0.97, "timing decode steps at each CPU thread count"))
    chosen = threads.choose_threads(native, known=reuse.part("threads"))
    profile = machine_profile.after_loading(reuse.stored, key, choice, chosen, source.name)
    if request.use_cache and profile != stored:
        machine_profile.write(profile)
    if request.use_cache:
        said.converted_cache = "native"  # read from the file, its records kept (a later launch: "hit", light)
    return Loaded(native, tokenizer, profile, stored)


def _torch_instead(why: str) -> Route:
    """The kernel measured or read the file and declined: transformers' model, torch's paths only."""
    return Route(RouteKind.TORCH, f"native left out: {why}", native_left_out=why)


def _digits(native: Any, request: LoadRequest, source: Source, parameters: int,
            tokenizer: Any) -> torch_path.PathChoice | str:
    """The native choice for a direct load: its activation digits chosen against transformers' float32 model
    where the file is small enough to hold one, else two digits with each matrix checked against gguf's own
    dequantiser (gguf_model.check_rows). Where no variant passes the quality gate and native was not asked
    for: why, in one line. A draft: the fastest digits, no reference and no quality pass (DRAFT_DIGITS)."""
    from app.native import direct, quality
    from app.native.backend import NativeBackend
    from app.native.build import assemble
    from app.native.descriptor import FASTEST_DIGITS

    path = source.path
    label = f"native: {path.name}'s own blocks, read by the kernel"
    if request.draft:
        return torch_path.PathChoice(replace(torch_path.NATIVE, digits=FASTEST_DIGITS.code), {}, False,
                                     f"{label}; {DRAFT_DIGITS}")
    known = None if request.remeasure else quality.MEASURED.get(direct.fingerprint(path))
    if known is not None:  # this very file was measured on every held-out token
        return torch_path.PathChoice(replace(torch_path.NATIVE, digits=known.digits.code), {}, False,
                                     f"{label}; quality: {known.describe()}, measured for this file")
    weights = native.cache_backend.weights

    def backend(d):
        return NativeBackend(assemble(native.config, weights.parts, weights.build, d))

    if parameters > REFERENCE_WEIGHTS:  # no float32 copy: the one-digit roles held against the two-digit pass
        request.progress(LoadProgress("kernels", 0.5, "measuring one activation digit against two"))
        chosen, _ = quality.choose_digits(backend, native, tokenizer, weights.vocab, quality.LARGE_TOKENS,
                                          reference=quality.two_digit_reference(backend))
        return torch_path.PathChoice(replace(torch_path.NATIVE, digits=chosen.digits.code), {}, False,
                                     f"{label}; each matrix checked against gguf's dequantiser, and quality: "
                                     f"{chosen.describe()} (no float32 copy above {REFERENCE_WEIGHTS:,} weights)")
    request.progress(LoadProgress("kernels", 0.5, "measuring the native path's quality against float32"))
    # not cached: a float copy is only this choice's reference (conversion_cache.store would replace the folder)
    reference, _ = load_gguf(path, source.name, torch.device("cpu"), torch.float32, Said(), request.progress,
                             use_cache=False)
    chosen, _ = quality.choose_digits(backend, reference, tokenizer, weights.vocab)
    del reference
    memory.release()
    if not chosen.passes and request.kernels != "native":
        return chosen.describe()
    path_choice = replace(torch_path.NATIVE, digits=chosen.digits.code)
    return torch_path.PathChoice(path_choice, {}, False, f"{label}; quality: {chosen.describe()}")


def _scratch() -> Path:
    """A tokenizer's folder where no cache is kept (use_cache=False)."""
    return Path(tempfile.mkdtemp(prefix="speclens-tokenizer-"))
