"""transformers' model and tokenizer from a folder or a GGUF file (dequantised, its float copy kept in the
conversion cache), refused where the weights do not fill the config. transformers is imported on use: a light
native launch never needs its model classes."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from app.errors import CorruptModel, NotAModel, OutOfMemory
from app.models import memory
from app.models.checkpoint import inspect_folder, inspect_gguf
from app.models.plan import Said
from app.models.progress import LoadProgress, ProgressCallback
from app.native import conversion_cache


def load_folder(path: Path, name: str, dev: torch.device, dtype: torch.dtype, said: Said, report: ProgressCallback,
                *, trust_remote_code: bool, allow_pickle: bool) -> tuple[Any, Any]:
    info = inspect_folder(path, trust_remote_code=trust_remote_code, allow_pickle=allow_pickle)
    parameters = info.parameters or info.weight_bytes // 2  # pickle: no header, assume 16-bit storage
    placement = memory.plan(memory.weight_bytes(parameters, dtype), dev, name)
    if placement.warning:
        said.warnings.append(placement.warning)
    report(LoadProgress("tokenizer", 0.35, placement.warning or "loading the tokenizer"))
    tokenizer = tokenizer_of(path, name, trust_remote_code=trust_remote_code)
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


def load_gguf(path: Path, name: str, dev: torch.device, dtype: torch.dtype, said: Said, report: ProgressCallback,
              *, use_cache: bool) -> tuple[Any, Any]:
    cached = conversion_cache.lookup(path) if use_cache else None
    if cached is not None and not (cached / "model.safetensors").is_file():
        cached = None  # a native load's folder, with no float copy yet: converted now, the copy joins it
    if cached is not None and (why := _stale(cached, path)) is not None:
        discard(cached, path, why, said)
        cached = None
    if cached is not None:
        said.converted_cache = "hit"
        report(LoadProgress("cache", 0.3, "using the converted-weights cache"))
        return load_folder(cached, name, dev, dtype, said, report, trust_remote_code=False, allow_pickle=False)
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
        said.converted_cache = "stored" if conversion_cache.store(path, model, tokenizer) else "failed"
    placement = memory.plan(memory.weight_bytes(info.parameters, dtype), dev, name)
    if placement.device_map is not None:
        raise OutOfMemory(f"{name} does not fit on {dev}; GGUF files are loaded onto one device only")
    report(LoadProgress("device", 0.9, f"moving to {dev}"))
    model = model.to(device=dev, dtype=dtype).eval()
    return model, tokenizer


def discard(folder: Path, gguf: Path, why: str, said: Said) -> None:
    """A converted copy that does not describe its file (edited, damaged, stale) is removed, and said."""
    conversion_cache.discard(folder)
    said.warnings.append(f"the converted copy of {gguf.name} was discarded and is made again: {why}")


def _stale(folder: Path, gguf: Path) -> str | None:
    """None when the converted copy's config describes the file, else why not."""
    from app.native.gguf.config import mismatch
    from app.native.light import config_of

    try:
        return mismatch(config_of(folder), gguf)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        return f"its config is unreadable ({first_line(exc)})"


def _weights_whole(name: str, load: Callable[..., Any]) -> Any:
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


def tokenizer_of(path: Path, name: str, *, trust_remote_code: bool, config: Any = None) -> Any:
    """config: the model's, when read already (else AutoTokenizer reads it, with the family's config class)."""
    from transformers import AutoTokenizer

    extra = {} if config is None else {"config": config}
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code, **extra)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise NotAModel(f"{name} has no usable tokenizer ({first_line(exc)})") from exc


def first_line(exc: BaseException) -> str:
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
