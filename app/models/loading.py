"""Load a target or draft model with its tokenizer from a spec string.

Specs: "default" (the embedded SmolLM2), a directory saved by save_pretrained, a .gguf file, or a
Hugging Face hub id. Every failure is a ModelError subclass with a message for the user. The load is one plan
(plan.py): the request typed once, its source located (locate.py), a route chosen once (plan.choose_route) and
run (route_light, route_direct, route_torch).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from app.errors import CorruptModel, ModelError, OutOfMemory, UnsupportedArchitecture
from app.machine import profile as machine_profile
from app.machine import torch_path
from app.machine.threads import ThreadChoice
from app.models import memory
from app.models.devices import default_dtype, parse_device
from app.models.embedded import DEFAULT_SPEC
from app.models.locate import Source, locate
from app.models.plan import KERNELS, Loaded, LoadRequest, Route, RouteKind, Said, choose_route
from app.models.progress import LoadProgress, ProgressCallback, ignore_progress
from app.models.route_direct import load_direct
from app.models.route_light import load_light
from app.models.route_torch import load_torch
from app.models.rows import output_rows
from app.models.transformers_load import first_line

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass
class LoadedModel:
    model: PreTrainedModel  # or, on the native path, native.model.NativeCausalLM (what the app reads of one)
    tokenizer: Any  # a transformers tokenizer
    name: str
    spec: str
    load_seconds: float = 0.0
    # source ("embedded", "gguf", "folder", "hub"), path, converted_cache ("hit"/"stored"), warnings, requested_dtype
    extra: dict = field(default_factory=dict)
    # What was measured for it on this machine: kernels, threads, v(n), drafter costs (machine_profile.py).
    profile: machine_profile.MachineProfile | None = None
    replaced: machine_profile.MachineProfile | None = None  # the cached profile a re-measure replaced (remeasure=True)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype

    @property
    def kernels(self) -> str:
        """The linear path that runs, for people: "Q4_1 + Q8_0 · native", "bf16 · oneDNN packed", "fp32"."""
        from app.native.model import is_native

        if is_native(self.model):
            return self.model.kernels
        chosen = self.profile.kernels if self.profile is not None else None
        return chosen.path.label if chosen is not None else torch_path.dtype_label(self.dtype)

    @property
    def threads(self) -> ThreadChoice | None:
        """The CPU thread count chosen at load (None on a GPU): its count, timings and reason."""
        return self.profile.threads if self.profile is not None else None

    @property
    def vocab_size(self) -> int:
        """Real vocabulary: logits past len(tokenizer) are padding and get masked."""
        rows = output_rows(self.model)
        return min(rows, len(self.tokenizer))

    @property
    def stop_token_ids(self) -> tuple[int, ...]:
        ids: set[int] = set()
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return tuple(sorted(ids))

    def encode_chat(self, messages: list[dict[str, str]]) -> torch.Tensor:
        """Messages [{role, content}] -> input ids [L], through the model's chat template."""
        if getattr(self.tokenizer, "chat_template", None):
            enc = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_dict=True, return_tensors="pt"
            )
            return enc["input_ids"][0]
        # No template (base models): plain concatenation of the turns.
        text = "\n".join(m["content"] for m in messages)
        return self.tokenizer(text, return_tensors="pt")["input_ids"][0]


def load_model(
    spec: str = DEFAULT_SPEC,
    *,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    trust_remote_code: bool = False,
    allow_pickle: bool = False,
    offline: bool | None = None,
    progress: ProgressCallback | None = None,
    use_cache: bool = True,
    remeasure: bool = False,
    kernels: str = "auto",
    draft: bool = False,
) -> LoadedModel:
    """offline=None follows HF_HUB_OFFLINE; use_cache=False skips the GGUF conversion cache and the machine
    profile. On a CPU, dtype=None lets timing choose the dtype and kernels (torch_path.choose_path), and the
    thread count is timed (threads.choose_threads), both reused from the model's machine profile while it
    holds (machine_profile.Reuse); remeasure=True times them again whatever it holds. kernels: "auto" (the
    fastest path, timed among torch's and the native C model's), "native" (the native model, whatever timing says)
    or "torch" (torch's paths only). draft=True: a draft's load (plan.LoadRequest.draft), the fastest native
    digits with no quality gate, in a profile of its own."""
    if kernels not in KERNELS:
        raise ModelError(f"kernels must be auto, native or torch, not {kernels!r}")
    start = time.perf_counter()
    dev = parse_device(device)
    request = LoadRequest(spec=spec, device=dev, requested=dtype, dtype=dtype or default_dtype(dev), kernels=kernels,
                          use_cache=use_cache, remeasure=remeasure, trust_remote_code=trust_remote_code,
                          allow_pickle=allow_pickle, offline=offline, progress=progress or ignore_progress,
                          draft=draft)
    _quiet_progress_bars()
    request.progress(LoadProgress("resolve", 0.0, f"locating {spec}"))
    source = locate(spec, offline=offline, allow_pickle=allow_pickle, report=request.progress)
    said = Said()
    try:
        route = choose_route(request, source)
        said.notes.extend(route.notes)
        loaded = follow(route, request, source, said)
    except ModelError:
        memory.release()
        raise
    except Exception as exc:
        memory.release()
        raise _as_model_error(exc, source.name) from exc
    request.progress(LoadProgress("done", 1.0, f"loaded {source.name}"))
    return LoadedModel(loaded.model, loaded.tokenizer, source.name, spec, time.perf_counter() - start,
                       said.extra(source, dtype), loaded.profile, loaded.stored if remeasure else None)


RouteRun = Callable[[LoadRequest, Source, Route, Said], Loaded | Route]
ROUTES: dict[RouteKind, RouteRun] = {RouteKind.LIGHT: load_light, RouteKind.DIRECT: load_direct,
                                     RouteKind.TORCH: load_torch}


def follow(route: Route, request: LoadRequest, source: Source, said: Said) -> Loaded:
    """Runs the chosen route. A native route that declines once it has read the file names the next one
    (LIGHT -> DIRECT -> TORCH), so this ends in at most three steps."""
    while True:
        result = ROUTES[route.kind](request, source, route, said)
        if isinstance(result, Loaded):
            return result
        route = result


def with_transformers(target: LoadedModel) -> LoadedModel:
    """A light native target (native.light.is_light) as transformers' model, for code that runs transformers'
    forward (distillation): the same file loaded again, on torch's float32 path."""
    return load_model(target.spec, device="cpu", dtype=torch.float32)


def _as_model_error(exc: Exception, name: str) -> ModelError:
    if memory.is_oom(exc):
        return OutOfMemory(f"ran out of memory while loading {name}; memory was released, pick a smaller model "
                           "or another device")
    if type(exc).__name__ == "SafetensorError":
        return CorruptModel(f"{name} has corrupt weights ({first_line(exc)})")
    text = first_line(exc)
    if isinstance(exc, ValueError | KeyError) and ("not supported" in text or "Unrecognized" in text):
        return UnsupportedArchitecture(f"{name}: {text}")
    return ModelError(f"could not load {name}: {text}")


def _quiet_progress_bars() -> None:
    """transformers and the hub draw their own tqdm bars; SpecLens reports progress through callbacks."""
    import huggingface_hub.utils
    import transformers.utils.logging

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()
