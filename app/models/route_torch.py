"""The TORCH route: transformers' model (a folder, a hub id, a GGUF dequantised) on the CPU linear path and
thread count its machine profile holds or timing chooses; the native model of its float weights where that
path wins (or is forced) and passes the quality gate."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from app.errors import UnsupportedArchitecture
from app.machine import cost_cache, threads, torch_path
from app.machine import profile as machine_profile
from app.models.locate import Source
from app.models.plan import DRAFT_DIGITS, Loaded, LoadRequest, Route, Said
from app.models.progress import LoadProgress, ProgressCallback
from app.models.transformers_load import load_folder, load_gguf


def load_torch(request: LoadRequest, source: Source, route: Route, said: Said) -> Loaded:
    if source.gguf:
        model, tokenizer = load_gguf(source.path, source.name, request.device, request.dtype, said, request.progress,
                                     use_cache=request.use_cache)
    else:
        model, tokenizer = load_folder(source.path, source.name, request.device, request.dtype, said,
                                       request.progress, trust_remote_code=request.trust_remote_code,
                                       allow_pickle=request.allow_pickle)
    # the direct route measured the native model already and said why not: only torch's paths are timed
    asked = "torch" if route.native_left_out is not None else request.kernels
    model, profile, stored = _measure_cpu(model, tokenizer, request, source.name, asked)
    return Loaded(model, tokenizer, profile, stored)


def _measure_cpu(model: Any, tokenizer: Any, request: LoadRequest, name: str,
                 asked: str) -> tuple[Any, machine_profile.MachineProfile, machine_profile.MachineProfile | None]:
    """(the model on its CPU linear path, its machine profile with that path and the thread count, the cached
    profile): reused or timed, and written back when anything was timed. A GPU or a model spread over
    devices has neither. On the native path the model returned is the native model (native.model) of its
    float weights; a GGUF the kernel runs never comes here (route_direct)."""
    dev, requested, report = request.device, request.requested, request.progress
    # auto offers the native C model beside torch's paths; choose_path times them all, and a native choice
    # keeps only where its quality against fp32 passes (native_path)
    native_ok = asked in ("auto", "native") and dev.type == "cpu"
    if asked == "native":
        _require_native(model, dev, requested)
    fingerprint = cost_cache.model_fingerprint(model)  # of the weights as loaded, before a path converts them
    key = machine_profile.key_of_fingerprint(fingerprint, dev, requested, asked, draft=request.draft)
    stored = machine_profile.read(key) if request.use_cache else None
    reuse = machine_profile.Reuse(stored, remeasure=request.remeasure)
    path = chosen = None
    if dev.type == "cpu" and getattr(model, "hf_device_map", None) is None:
        report(LoadProgress("kernels", 0.95, "timing this CPU's linear kernels"))
        if asked == "native":
            known = reuse.part("kernels")
            path = known if known is not None and known.path.native else torch_path.PathChoice(
                torch_path.NATIVE, {}, False, "native: asked for (--kernels native)")
        else:
            path = torch_path.choose_path(model, requested, known=reuse.part("kernels"), native=native_ok)
        native = None
        if path.path.native:
            path, native = native_path(model, tokenizer, path, requested, forced=asked == "native", report=report,
                                       draft=request.draft)
        report(LoadProgress("kernels", 0.97, "timing decode steps at each CPU thread count"))
        # Timed on the path that runs: apply_path converts in place, so the choice is applied first.
        model = native if native is not None else torch_path.apply_path(model, path.path)
        chosen = threads.choose_threads(model, known=reuse.part("threads"))
    profile = machine_profile.after_loading(reuse.stored, key, path, chosen, name)
    if request.use_cache and profile != stored:
        machine_profile.write(profile)
    return model, profile, stored


def _require_native(model: Any, dev: torch.device, requested: torch.dtype | None) -> None:
    from app.native import unavailable
    from app.native.build import native_support

    why = ("the native kernel runs on a CPU" if dev.type != "cpu" else
           "the native kernel chooses its own number format (leave --dtype auto)" if requested is not None else
           unavailable() or native_support(model))
    if why:
        raise UnsupportedArchitecture(f"--kernels native: {why}")


def native_path(model: Any, tokenizer: Any, path: torch_path.PathChoice, requested: torch.dtype | None, *,
                forced: bool, report: ProgressCallback, draft: bool = False) -> tuple[torch_path.PathChoice, Any]:
    """(the native choice with its measured quality and activation digits, the native model) or, where the
    kernel does not run the model or (not forced) no variant passes the quality gate, (the fastest torch path,
    None). A cached choice keeps its digits; a new one measures each matrix role's sensitivity (quality.py), except
    a draft's: the fastest digits, no quality pass (its precision changes only how often its tokens are accepted)."""
    from app.native import quality
    from app.native.backend import NativeBackend
    from app.native.build import assemble
    from app.native.descriptor import FASTEST_DIGITS, Digits, Unfit
    from app.native.model import from_transformers

    digits = FASTEST_DIGITS if draft and not path.cached else Digits.of_code(path.path.digits)
    try:
        native = from_transformers(model, digits=digits)
    except Unfit as exc:
        if forced:
            raise UnsupportedArchitecture(f"--kernels native: {exc}") from exc
        fallback = torch_path.choose_path(model, requested, native=False)
        return replace(fallback, reason=f"{fallback.reason}; native left out: {exc}"), None
    if path.cached:
        return path, native  # its quality was measured when it was chosen, and is in its reason
    if draft:
        return replace(path, path=replace(path.path, digits=digits.code), reason=f"{path.reason}; {DRAFT_DIGITS}"), native
    report(LoadProgress("kernels", 0.96, "measuring the native path's quality against fp32"))
    weights = native.cache_backend.weights
    chosen, _ = quality.choose_digits(lambda d: NativeBackend(assemble(model.config, weights.parts, weights.build, d)),
                                      model, tokenizer, weights.vocab)
    if chosen.passes or forced:
        if chosen.digits != digits:
            native = from_transformers(model, digits=chosen.digits)
        path = replace(path, path=replace(path.path, digits=chosen.digits.code))
        return replace(path, reason=f"{path.reason}; quality: {chosen.describe()}"), native
    fallback = torch_path.choose_path(model, requested, native=False)
    return replace(fallback, reason=f"{fallback.reason}; native left out: {chosen.describe()}"), None
