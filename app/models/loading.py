"""Load a target or draft model with its tokenizer from a spec string.

Specs: "default" (the embedded SmolLM2), a directory saved by save_pretrained, a .gguf file, or a
Hugging Face hub id. Every failure is a ModelError subclass with a message for the user.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from app.errors import (
    CorruptModel,
    ModelError,
    ModelNotFound,
    NotAModel,
    OutOfMemory,
    UnsupportedArchitecture,
)
from app.machine import cost_cache, threads, torch_path
from app.machine import profile as machine_profile
from app.machine.threads import ThreadChoice
from app.models import memory
from app.models.checkpoint import inspect_folder, inspect_gguf
from app.models.devices import default_dtype, parse_device
from app.models.embedded import DEFAULT_SPEC, EMBEDDED_NAME, embedded_gguf
from app.models.hub import looks_like_repo_id, resolve_repo
from app.models.progress import LoadProgress, ProgressCallback, ignore_progress
from app.models.rows import output_rows
from app.native import conversion_cache

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
) -> LoadedModel:
    """offline=None follows HF_HUB_OFFLINE; use_cache=False skips the GGUF conversion cache and the machine
    profile. On a CPU, dtype=None lets timing choose the dtype and kernels (torch_path.choose_path), and the
    thread count is timed (threads.choose_threads), both reused from the model's machine profile while it
    holds (machine_profile.Reuse); remeasure=True times them again whatever it holds. kernels: "auto" (the
    fastest path, timed among torch's and the native C model's), "native" (the native model, whatever timing says)
    or "torch" (torch's paths only)."""
    if kernels not in ("auto", "native", "torch"):
        raise ModelError(f"kernels must be auto, native or torch, not {kernels!r}")
    report = progress or ignore_progress
    start = time.perf_counter()
    dev = parse_device(device)
    requested = dtype
    dtype = dtype or default_dtype(dev)
    _quiet_progress_bars()
    report(LoadProgress("resolve", 0.0, f"locating {spec}"))
    kind, path, name = locate(spec, offline=offline, allow_pickle=allow_pickle, report=report)
    extra: dict = {"source": kind, "path": str(path), "warnings": [],
                   "requested_dtype": str(requested).removeprefix("torch.") if requested else "auto"}
    try:
        light = direct = None
        if kind in ("embedded", "gguf") and use_cache and not remeasure:
            light = _light_native(path, name, dev, requested, kernels, extra, report)
        if light is None and kind in ("embedded", "gguf"):
            direct = _direct_native(path, name, dev, requested, kernels, use_cache, remeasure, extra, report)
        found = light or direct
        if found is not None:
            model, tokenizer, profile, stored = found
        else:
            if kind in ("embedded", "gguf"):
                model, tokenizer = _load_gguf(path, name, dev, dtype, use_cache, extra, report)
            else:
                model, tokenizer = _load_folder(path, name, dev, dtype, trust_remote_code, allow_pickle, extra,
                                                report)
            native_ok = "native_left_out" not in extra  # the direct load measured it already and said why not
            model, profile, stored = _measure_cpu(model, tokenizer, requested, dev, name, use_cache, remeasure,
                                                  report, kernels if native_ok else "torch")
    except ModelError:
        memory.release()
        raise
    except Exception as exc:
        memory.release()
        raise _as_model_error(exc, name) from exc
    report(LoadProgress("done", 1.0, f"loaded {name}"))
    return LoadedModel(model, tokenizer, name, spec, time.perf_counter() - start, extra, profile,
                       stored if remeasure else None)


def _measure_cpu(model, tokenizer, requested, dev, name, use_cache, remeasure, report, asked="auto"):
    """(the model on its CPU linear path, its machine profile with that path and the thread count, the cached
    profile): reused or timed, and written back when anything was timed. A GPU or a model spread over
    devices has neither. On the native path the model returned is the native model (native.model) of its
    float weights; a GGUF the kernel runs never comes here (_direct_native)."""
    # auto offers the native C model beside torch's paths; choose_path times them all, and a native choice
    # keeps only where its quality against fp32 passes (_native_path)
    native_ok = asked in ("auto", "native") and dev.type == "cpu"
    if asked == "native":
        _require_native(model, dev, requested)
    fingerprint = cost_cache.model_fingerprint(model)  # of the weights as loaded, before a path converts them
    key = machine_profile.key_of_fingerprint(fingerprint, dev, requested, asked)
    stored = machine_profile.read(key) if use_cache else None
    reuse = machine_profile.Reuse(stored, remeasure=remeasure)
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
            path, native = _native_path(model, tokenizer, path, requested, forced=asked == "native", report=report)
        report(LoadProgress("kernels", 0.97, "timing decode steps at each CPU thread count"))
        # Timed on the path that runs: apply_path converts in place, so the choice is applied first.
        model = native if native is not None else torch_path.apply_path(model, path.path)
        chosen = threads.choose_threads(model, known=reuse.part("threads"))
    profile = machine_profile.after_loading(reuse.stored, key, path, chosen, name)
    if use_cache and profile != stored:
        machine_profile.write(profile)
    return model, profile, stored


def _direct_native(path: Path, name: str, dev, requested, asked: str, use_cache: bool, remeasure: bool, extra: dict,
                   report):
    """(native model, tokenizer, profile, stored profile) of a GGUF the kernel runs, read straight from the file
    (native/direct.py): no transformers model classes, no float copy. A file of at most REFERENCE_WEIGHTS also
    loads transformers' float32 model once, as the reference its activation digits are chosen against. None
    where the kernel does not run the file (`extra["native_left_out"]` says why) and transformers' path loads."""
    from app.native import direct, unavailable
    from app.native.descriptor import Digits, Unfit
    from app.native.model import with_digits

    if dev.type != "cpu" or requested is not None or asked == "torch" or unavailable():
        return None
    info = inspect_gguf(path)
    try:
        index, config = direct.read(path)
    except Unfit as exc:
        if asked == "native":
            raise UnsupportedArchitecture(f"--kernels native: {exc}") from exc
        extra["native_left_out"] = str(exc)
        return None
    folder = conversion_cache.entry_dir(path) if use_cache else None
    report(LoadProgress("tokenizer", 0.05, "reading the tokenizer"))
    tokenizer = direct.tokenizer_of(path, folder if folder is not None else _scratch(), extra.setdefault("notes", []))
    key = machine_profile.key_of_fingerprint(direct.fingerprint(path), dev, requested, asked)
    stored = machine_profile.read(key) if use_cache else None
    reuse = machine_profile.Reuse(stored, remeasure=remeasure)
    report(LoadProgress("weights", 0.2, f"reading {path.name}'s blocks"))
    native = direct.build(path, index, config, folder, notes=extra.setdefault("notes", []))
    choice = reuse.part("kernels")
    if choice is None or not choice.path.native:
        choice = _direct_digits(native, path, name, info.parameters, tokenizer, asked, use_cache, remeasure, extra,
                                report)
        if choice is None:
            return None
    native = with_digits(native, Digits.of_code(choice.path.digits))
    if folder is not None:
        direct.keep(folder, native)
    report(LoadProgress("kernels", 0.97, "timing decode steps at each CPU thread count"))
    chosen = threads.choose_threads(native, known=reuse.part("threads"))
    profile = machine_profile.after_loading(reuse.stored, key, choice, chosen, name)
    if use_cache and profile != stored:
        machine_profile.write(profile)
    if use_cache:
        extra["converted_cache"] = "native"  # read from the file, its records kept (a later launch: "hit", light)
    return native, tokenizer, profile, stored


REFERENCE_WEIGHTS = 10**9  # up to this many, transformers' float32 model (4 bytes a weight) is the quality reference


def _direct_digits(native, path: Path, name: str, parameters: int, tokenizer, asked: str, use_cache: bool,
                   remeasure: bool, extra: dict, report) -> torch_path.PathChoice | None:
    """The native choice for a direct load: its activation digits chosen against transformers' float32 model
    where the file is small enough to hold one, else two digits with each matrix checked against gguf's own
    dequantiser (gguf_model.check_rows). None where no variant passes the quality gate and native was not
    asked for (`extra["native_left_out"]` says why)."""
    from app.native import direct, quality
    from app.native.backend import NativeBackend
    from app.native.build import assemble

    label = f"native: {path.name}'s own blocks, read by the kernel"
    known = None if remeasure else quality.MEASURED.get(direct.fingerprint(path))
    if known is not None:  # this very file was measured on every held-out token
        return torch_path.PathChoice(replace(torch_path.NATIVE, digits=known.digits.code), {}, False,
                                  f"{label}; quality: {known.describe()}, measured for this file")
    if parameters > REFERENCE_WEIGHTS:
        return torch_path.PathChoice(torch_path.NATIVE, {}, False, f"{label}; each matrix checked against gguf's "
                                  f"dequantiser (no float32 reference above {REFERENCE_WEIGHTS:,} weights)")
    report(LoadProgress("kernels", 0.5, "measuring the native path's quality against float32"))
    # not cached: a float copy is only this choice's reference (conversion_cache.store would replace the folder)
    reference, _ = _load_gguf(path, name, torch.device("cpu"), torch.float32, False, {"warnings": []}, report)
    weights = native.cache_backend.weights
    chosen, _ = quality.choose_digits(lambda d: NativeBackend(assemble(native.config, weights.parts, weights.build, d)),
                                      reference, tokenizer, weights.vocab)
    del reference
    memory.release()
    if not chosen.passes and asked != "native":
        extra["native_left_out"] = chosen.describe()
        return None
    path_choice = replace(torch_path.NATIVE, digits=chosen.digits.code)
    return torch_path.PathChoice(path_choice, {}, False, f"{label}; quality: {chosen.describe()}")


def _scratch() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix="speclens-tokenizer-"))


def _light_native(path: Path, name: str, dev, requested, asked: str, extra: dict, report):
    """(model, tokenizer, profile, stored profile) of the light native model (native/light.py) where this GGUF's
    cached profile chose the native path and its kernel and thread parts are reusable now; else None, and
    transformers' model loads and is measured as on a first launch."""
    from app.native import light, unavailable
    from app.native.descriptor import Digits

    if dev.type != "cpu" or requested is not None or asked == "torch" or unavailable():
        return None
    from app.native.record import RECORD, read_record

    folder = conversion_cache.lookup(path)
    record = read_record(folder) if folder is not None else None
    if record is None:
        if folder is not None and (folder / RECORD).exists():
            extra.setdefault("notes", []).append(f"{path.name}'s native record was unreadable: loaded in full, "
                                                 "and the record written again")
        return None
    assert folder is not None  # the record was read from it
    key = machine_profile.key_of_fingerprint(record.fingerprint, dev, requested, asked)
    reuse = machine_profile.Reuse(machine_profile.read(key))
    path_part, threads_part = reuse.part("kernels"), reuse.part("threads")
    if path_part is None or not path_part.path.native or threads_part is None:
        return None
    report(LoadProgress("cache", 0.3, "using the converted-weights cache"))
    try:
        config = light.config_of(folder)
        report(LoadProgress("tokenizer", 0.35, "loading the tokenizer"))
        tokenizer = _tokenizer(folder, name, trust_remote_code=False, config=config)
        report(LoadProgress("weights", 0.4, f"reading {path.name}'s 4-bit blocks"))
        model = light.load(folder, path, record, config, extra.setdefault("notes", []),
                           Digits.of_code(path_part.path.digits))
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001  a light load only saves time: anything wrong means a full load
        _discard(folder, path, _first_line(exc), extra)  # which converts the file anew
        return None
    extra.update(converted_cache="hit", light=True)
    chosen = threads.choose_threads(model, known=threads_part)
    return model, tokenizer, machine_profile.after_loading(reuse.stored, key, path_part, chosen, name), reuse.stored


def with_transformers(target: LoadedModel) -> LoadedModel:
    """A light native target (native.light.is_light) as transformers' model, for code that runs transformers'
    forward (distillation): the same file loaded again, on torch's float32 path."""
    return load_model(target.spec, device="cpu", dtype=torch.float32)


def _require_native(model, dev, requested) -> None:
    from app.native import unavailable
    from app.native.build import native_support

    why = ("the native kernel runs on a CPU" if dev.type != "cpu" else
           "the native kernel chooses its own number format (leave --dtype auto)" if requested is not None else
           unavailable() or native_support(model))
    if why:
        raise UnsupportedArchitecture(f"--kernels native: {why}")


def _native_path(model, tokenizer, path: torch_path.PathChoice, requested, *, forced: bool, report):
    """(the native choice with its measured quality and activation digits, the native model) or, where the
    kernel does not run the model or (not forced) no variant passes the quality gate, (the fastest torch path,
    None). A cached choice keeps its digits; a new one measures each matrix role's sensitivity (quality.py)."""
    from app.native import quality
    from app.native.backend import NativeBackend
    from app.native.build import assemble
    from app.native.descriptor import Digits, Unfit
    from app.native.model import from_transformers

    digits = Digits.of_code(path.path.digits)
    try:
        native = from_transformers(model, digits=digits)
    except Unfit as exc:
        if forced:
            raise UnsupportedArchitecture(f"--kernels native: {exc}") from exc
        fallback = torch_path.choose_path(model, requested, native=False)
        return replace(fallback, reason=f"{fallback.reason}; native left out: {exc}"), None
    if path.cached:
        return path, native  # its quality was measured when it was chosen, and is in its reason
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


def locate(spec: str, *, offline: bool | None, allow_pickle: bool, report: ProgressCallback) -> tuple[str, Path, str]:
    """(kind, local path, display name) for a spec; hub ids are downloaded or found in the cache."""
    if not spec or not spec.strip():
        raise ModelNotFound("no model given: use 'default', a model directory, a .gguf file or a hub id")
    if spec == DEFAULT_SPEC:
        return "embedded", embedded_gguf(), EMBEDDED_NAME
    path = Path(spec).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise NotAModel(f"{path} is a file but not a .gguf model; give a model directory, a .gguf file or a hub id")
        return "gguf", path, path.stem
    if path.is_dir():
        return "folder", path, path.name
    if path.suffix.lower() == ".gguf" or spec.startswith((".", "/", "~")) or not looks_like_repo_id(spec):
        raise ModelNotFound(f"{spec}: no such file or directory")
    report(LoadProgress("download", 0.05, f"looking up {spec} on the Hugging Face hub"))
    return "hub", resolve_repo(spec, offline=offline, allow_pickle=allow_pickle, progress=report), spec


def _load_folder(path, name, dev, dtype, trust_remote_code, allow_pickle, extra, report):
    info = inspect_folder(path, trust_remote_code=trust_remote_code, allow_pickle=allow_pickle)
    parameters = info.parameters or info.weight_bytes // 2  # pickle: no header, assume 16-bit storage
    placement = memory.plan(memory.weight_bytes(parameters, dtype), dev, name)
    if placement.warning:
        extra["warnings"].append(placement.warning)
    report(LoadProgress("tokenizer", 0.35, placement.warning or "loading the tokenizer"))
    tokenizer = _tokenizer(path, name, trust_remote_code=trust_remote_code)
    report(LoadProgress("weights", 0.4, f"loading {info.weight_bytes / 2**20:.0f} MiB of weights",
                        0, info.weight_bytes))
    from transformers import AutoModelForCausalLM

    kwargs: dict = {"dtype": dtype, "trust_remote_code": trust_remote_code, "use_safetensors": info.safetensors}
    if placement.device_map is not None:
        kwargs["device_map"] = placement.device_map
    model = _weights_whole(name, lambda **more: AutoModelForCausalLM.from_pretrained(path, **kwargs, **more))
    if placement.device_map is None:
        report(LoadProgress("device", 0.9, f"moving to {dev}", info.weight_bytes, info.weight_bytes))
        model = model.to(dev)
    return model.eval(), tokenizer


def _discard(folder: Path, gguf: Path, why: str, extra: dict) -> None:
    """A converted copy that does not describe its file (edited, damaged, stale) is removed, and said."""
    conversion_cache.discard(folder)
    extra["warnings"].append(f"the converted copy of {gguf.name} was discarded and is made again: {why}")


def _stale(folder: Path, gguf: Path) -> str | None:
    """None when the converted copy's config describes the file, else why not."""
    from app.native.gguf.config import mismatch
    from app.native.light import config_of

    try:
        return mismatch(config_of(folder), gguf)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        return f"its config is unreadable ({_first_line(exc)})"


def _load_gguf(path, name, dev, dtype, use_cache, extra, report):
    cached = conversion_cache.lookup(path) if use_cache else None
    if cached is not None and not (cached / "model.safetensors").is_file():
        cached = None  # a native load's folder, with no float copy yet: converted now, the copy joins it
    if cached is not None and (why := _stale(cached, path)) is not None:
        _discard(cached, path, why, extra)
        cached = None
    if cached is not None:
        extra["converted_cache"] = "hit"
        report(LoadProgress("cache", 0.3, "using the converted-weights cache"))
        model, tokenizer = _load_folder(cached, name, dev, dtype, False, False, extra, report)
        return model, tokenizer
    info = inspect_gguf(path)
    cacheable = use_cache and info.parameters * 4 <= conversion_cache.MAX_CACHED_BYTES
    # Dequantise in float32 when caching, so the cache is exact and serves any later dtype.
    load_dtype = torch.float32 if cacheable else dtype
    memory.plan(memory.weight_bytes(info.parameters, load_dtype), torch.device("cpu"), name)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    report(LoadProgress("tokenizer", 0.05, "reading the tokenizer from the GGUF file"))
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    report(LoadProgress("convert", 0.15, f"dequantising {path.name} (first load only)" if cacheable
                        else f"dequantising {path.name}"))
    with _conversion_progress(report):
        model = _weights_whole(name, lambda **more: AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=load_dtype, **more))
    if cacheable:
        report(LoadProgress("cache", 0.8, "saving converted weights for the next launch"))
        extra["converted_cache"] = "stored" if conversion_cache.store(path, model, tokenizer) else "failed"
    placement = memory.plan(memory.weight_bytes(info.parameters, dtype), dev, name)
    if placement.device_map is not None:
        raise OutOfMemory(f"{name} does not fit on {dev}; GGUF files are loaded onto one device only")
    report(LoadProgress("device", 0.9, f"moving to {dev}"))
    model = model.to(device=dev, dtype=dtype).eval()
    return model, tokenizer


def _weights_whole(name: str, load):
    """load(**more): transformers' from_pretrained; the model, refused with the first fault in one line where
    the checkpoint's weights do not fill the config (transformers would start missing or mismatched ones
    from random values: an answer of noise) or hold NaN or infinity."""
    try:
        model, info = load(output_loading_info=True)
    except RuntimeError as exc:
        if "ignore_mismatched_sizes" not in str(exc):
            raise
        _, info = load(output_loading_info=True, ignore_mismatched_sizes=True)  # only to name the mismatch
        key, ckpt, wanted = sorted(info["mismatched_keys"])[0]
        raise CorruptModel(f"{name}'s weights do not match its config: {key} is {list(ckpt)} in the file, "
                           f"{list(wanted)} by the config") from exc
    missing = sorted(info["missing_keys"])
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise CorruptModel(f"{name} lacks weights its config needs: {missing[0]}{more}")
    for key, weight in model.state_dict().items():
        if weight.is_floating_point() and weight.device.type != "meta" and not bool(torch.isfinite(weight).all()):
            raise CorruptModel(f"{name}'s weights hold NaN or infinity ({key})")
    return model


def _tokenizer(path: Path, name: str, *, trust_remote_code: bool, config=None):
    """config: the model's, when read already (else AutoTokenizer reads it, with the family's config class)."""
    from transformers import AutoTokenizer

    extra = {} if config is None else {"config": config}
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, **extra)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise NotAModel(f"{name} has no usable tokenizer ({_first_line(exc)})") from exc


def _as_model_error(exc: Exception, name: str) -> ModelError:
    if memory.is_oom(exc):
        return OutOfMemory(f"ran out of memory while loading {name}; memory was released, pick a smaller model "
                           "or another device")
    if type(exc).__name__ == "SafetensorError":
        return CorruptModel(f"{name} has corrupt weights ({_first_line(exc)})")
    text = _first_line(exc)
    if isinstance(exc, ValueError | KeyError) and ("not supported" in text or "Unrecognized" in text):
        return UnsupportedArchitecture(f"{name}: {text}")
    return ModelError(f"could not load {name}: {text}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


@contextmanager
def _conversion_progress(report: ProgressCallback):
    """transformers' GGUF dequantiser draws a bare tqdm bar that disable_progress_bar() does not reach;
    route its per-tensor loop to the progress callback instead for the duration of one load."""
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    original = gguf_utils.tqdm

    def reporting(iterable, **_):
        items = list(iterable)
        for i, item in enumerate(items):
            if i % 16 == 0:
                report(LoadProgress("convert", 0.15 + 0.6 * i / len(items), f"dequantising tensor {i}/{len(items)}"))
            yield item
        report(LoadProgress("convert", 0.75, f"dequantised {len(items)} tensors"))  # the phase's bar ends full

    gguf_utils.tqdm = reporting
    try:
        yield
    finally:
        gguf_utils.tqdm = original


def _quiet_progress_bars() -> None:
    """transformers and the hub draw their own tqdm bars; SpecLens reports progress through callbacks."""
    import huggingface_hub.utils
    import transformers.utils.logging

    transformers.utils.logging.disable_progress_bar()
    huggingface_hub.utils.disable_progress_bars()
