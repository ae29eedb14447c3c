"""Loading as one plan: the request, typed once; the route it takes, chosen once (choose_route); what a route
gives back.

Three routes load a model:
  LIGHT   the native model from the conversion cache: this GGUF's record and a cached profile that chose the
          native path (native/light.py); no transformers model classes, the fastest second launch.
  DIRECT  the native model from the GGUF's own blocks (native/direct.py): the kernel's first read of a file.
  TORCH   transformers' model (a folder, a hub id, a GGUF dequantised), its CPU path and threads timed.
A native route may still decline once it has read the file: it then names the next route (a damaged cache:
LIGHT -> DIRECT; the kernel does not run the file or its quality does not pass: DIRECT -> TORCH, torch's paths
only). Nothing decides a route from what a load reports to its user (Said).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from app.machine import profile as machine_profile
from app.machine.threads import ThreadChoice
from app.machine.torch_path import PathChoice
from app.models.locate import Source
from app.models.progress import ProgressCallback
from app.native import conversion_cache

if TYPE_CHECKING:
    from app.native.record import Record

KERNELS = ("auto", "native", "torch")
DRAFT_DIGITS = "draft: fastest digits, no quality gate"  # why a draft's native choice is what it is (its reason)


@dataclass(frozen=True)
class LoadRequest:
    """load_model's arguments, checked and typed once."""

    spec: str
    device: torch.device
    requested: torch.dtype | None  # the dtype asked for; None lets timing choose (a CPU) or the device's default
    dtype: torch.dtype  # requested, else the device's default: what transformers' model loads in
    kernels: str  # KERNELS: "auto" times the native model beside torch's paths, "native" forces it, "torch" not
    use_cache: bool  # the GGUF conversion cache and the machine profile
    remeasure: bool  # time kernels and threads again whatever the profile holds
    trust_remote_code: bool
    allow_pickle: bool
    offline: bool | None
    progress: ProgressCallback
    # a draft's load (drafts.model_draft): its precision changes only how often the target accepts its tokens,
    # never the output, so a native draft takes the fastest digits with no quality gate (and its own profile)
    draft: bool = False


@dataclass
class Said:
    """What a load tells its user beside the model (LoadedModel.extra). Routes write it; no route reads it."""

    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    converted_cache: str | None = None  # "hit", "stored", "failed", "native" (read from the file, records kept)
    light: bool = False

    def extra(self, source: Source, requested: torch.dtype | None) -> dict:
        out: dict = {"source": source.kind, "path": str(source.path), "warnings": self.warnings,
                     "requested_dtype": str(requested).removeprefix("torch.") if requested else "auto"}
        if self.converted_cache is not None:
            out["converted_cache"] = self.converted_cache
        if self.light:
            out["light"] = True
        if self.notes:
            out["notes"] = self.notes
        return out


@dataclass(frozen=True)
class Loaded:
    """A route's outcome."""

    model: Any  # transformers' PreTrainedModel, or the native model (native.model.NativeCausalLM)
    tokenizer: Any
    profile: machine_profile.MachineProfile | None  # what was measured for it here; None on a GPU
    stored: machine_profile.MachineProfile | None  # the cached profile before this load (remeasure reports it)


class RouteKind(Enum):
    LIGHT = "native, light"
    DIRECT = "native, from the file's blocks"
    TORCH = "torch"


@dataclass(frozen=True)
class CachedLight:
    """What a light load needs from the cache, read while choosing the route (so it is read once)."""

    folder: Path  # the conversion cache's folder of this GGUF
    record: Record
    key: str  # the profile's key, from the record's fingerprint
    reuse: machine_profile.Reuse
    kernels: PathChoice  # the cached native choice, with its activation digits
    threads: ThreadChoice


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    reason: str  # one line, for tests and debugging
    light: CachedLight | None = None  # LIGHT only
    native_left_out: str | None = None  # TORCH after the kernel read the file and declined: torch's paths only
    notes: tuple[str, ...] = ()  # for the user, found while choosing


def choose_route(request: LoadRequest, source: Source) -> Route:
    """The route a load starts on. Reads only small files (the cache's record and the profile), no weights."""
    if not source.gguf:
        return Route(RouteKind.TORCH, f"a {source.kind}: transformers' model")
    refused = native_refused(request)
    if refused is not None:
        return Route(RouteKind.TORCH, refused)
    notes: tuple[str, ...] = ()
    if request.use_cache and not request.remeasure:
        cached, note = cached_light(request, source.path)
        if cached is not None:
            return Route(RouteKind.LIGHT, "the cache holds this file's record and a native profile", light=cached)
        notes = (note,) if note is not None else ()
    return Route(RouteKind.DIRECT, "the kernel reads the file's blocks", notes=notes)


def native_refused(request: LoadRequest) -> str | None:
    """Why no native route is tried (transformers' model loads, and --kernels native is refused there), or None.
    The kernel's own check comes last: it loads the built library."""
    if request.device.type != "cpu":
        return "the native kernel runs on a CPU"
    if request.requested is not None:
        return "a dtype was asked for: the native kernel chooses its own number format"
    if request.kernels == "torch":
        return "--kernels torch"
    from app.native import unavailable

    return unavailable()


def cached_light(request: LoadRequest, gguf: Path) -> tuple[CachedLight | None, str | None]:
    """(what a light load of this GGUF needs, None) where its record and a profile that chose the native path
    with a thread count are usable now; else (None, a note for the user where the record is damaged, else None:
    a first load has none)."""
    from app.native import record as native_record

    folder = conversion_cache.lookup(gguf)
    if folder is None:
        return None, None
    record = native_record.read_record(folder)
    if record is None:
        if (folder / native_record.RECORD).exists():
            return None, (f"{gguf.name}'s native record was unreadable: loaded in full, "
                          "and the record written again")
        return None, None
    key = machine_profile.key_of_fingerprint(record.fingerprint, request.device, request.requested, request.kernels,
                                             draft=request.draft)
    reuse = machine_profile.Reuse(machine_profile.read(key))
    kernels, threads = reuse.part("kernels"), reuse.part("threads")
    if kernels is None or not kernels.path.native or threads is None:
        return None, None
    return CachedLight(folder, record, key, reuse, kernels, threads), None
