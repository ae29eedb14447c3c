"""Inspect a checkpoint before loading it: is it a causal LM, is it safe, is it intact, how big.

Everything here reads metadata only (config.json, safetensors headers, GGUF headers), so a bad
checkpoint is refused in milliseconds with a message instead of failing deep inside transformers.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

from app.errors import CorruptModel, NotAModel, PickleOnly, RemoteCodeRequired, UnsupportedArchitecture

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt")
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
               "F8_E4M3": 1, "F8_E5M2": 1}


@dataclass(frozen=True)
class FolderInfo:
    path: Path
    model_type: str
    architectures: tuple[str, ...]
    vocab_rows: int | None
    parameters: int  # element count from the weight headers (0 when only pickle files give sizes)
    weight_bytes: int  # bytes on disk of the weight files
    safetensors: bool


def read_config(folder: Path) -> dict:
    path = folder / "config.json"
    if not path.is_file():
        raise NotAModel(f"{folder} is not a model directory: it has no config.json")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptModel(f"{path} is not valid JSON ({exc})") from exc
    if not isinstance(config, dict):
        raise CorruptModel(f"{path} does not hold a JSON object")
    return config


def is_causal_lm(config: dict) -> bool:
    """Cheap test used by the catalog: a ForCausalLM architecture or a known causal model type."""
    archs = config.get("architectures") or []
    if archs:  # decided without transformers, whose auto mapping imports torch (seconds at start-up)
        return any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs)
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return config.get("model_type") in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES


def check_architecture(config: dict, where: Path, trust_remote_code: bool) -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_type = config.get("model_type")
    remote = (config.get("auto_map") or {}).get("AutoModelForCausalLM")
    if remote and (model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or trust_remote_code):
        if not trust_remote_code:
            raise RemoteCodeRequired(
                f"{where} needs its own Python code ({remote}) to load. Running it executes code from the model's "
                "author on this machine; allow it only if you trust them: --trust-remote-code "
                "(trust_remote_code=True)."
            )
        return
    if model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        known = "" if model_type is None else f" (model_type {model_type!r})"
        raise UnsupportedArchitecture(
            f"{where} is not a causal language model transformers can build{known}; SpecLens needs a "
            "decoder-only text model such as Llama, Qwen2, SmolLM or Mistral."
        )


def safetensors_header(path: Path) -> dict:
    """The JSON header of a .safetensors file, checked against the file's length."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            raw = f.read(8)
            if len(raw) < 8:
                raise CorruptModel(f"{path.name} is truncated: {size} bytes, not even a safetensors header")
            (n,) = struct.unpack("<Q", raw)
            if n > min(size - 8, 100 * 2**20):
                raise CorruptModel(f"{path.name} is corrupt or truncated (header of {n} bytes in a {size}-byte file)")
            header = json.loads(f.read(n))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptModel(f"{path.name} is not a valid safetensors file ({exc})") from exc
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end > size:
        raise CorruptModel(
            f"{path.name} is truncated: its header describes {8 + n + end:,} bytes but the file has {size:,}. "
            "Download or copy it again."
        )
    return header


def inspect_folder(folder: Path, *, trust_remote_code: bool = False, allow_pickle: bool = False) -> FolderInfo:
    """Validate a save_pretrained folder. Raises a ModelError subclass describing what is wrong."""
    config = read_config(folder)
    check_architecture(config, folder, trust_remote_code)
    safetensors = sorted(folder.glob("*.safetensors"))
    pickles = sorted(p for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES and p.is_file())
    parameters = 0
    if safetensors:
        for path in safetensors:
            for name, tensor in safetensors_header(path).items():
                if name != "__metadata__":
                    parameters += _numel(tensor["shape"])
        weights = safetensors
    elif pickles:
        if not allow_pickle:
            raise PickleOnly(
                f"{folder} has only pickle weights ({', '.join(p.name for p in pickles[:3])}). Unpickling can run "
                "arbitrary code, so it is refused by default; load it only if you trust its source: "
                "--allow-pickle (allow_pickle=True), or convert it to safetensors."
            )
        weights = pickles
    else:
        raise NotAModel(f"{folder} has a config.json but no weights (*.safetensors)")
    text = config.get("text_config") or {}
    return FolderInfo(
        path=folder,
        model_type=str(config.get("model_type")),
        architectures=tuple(config.get("architectures") or ()),
        vocab_rows=config.get("vocab_size") or text.get("vocab_size"),
        parameters=parameters,
        weight_bytes=sum(p.stat().st_size for p in weights),
        safetensors=bool(safetensors),
    )


@dataclass(frozen=True)
class GgufInfo:
    path: Path
    architecture: str
    parameters: int


def inspect_gguf(path: Path) -> GgufInfo:
    """Walk a GGUF header and check it against the file: every size, offset and tensor inside it (gguf_index)."""
    from app.native.gguf.index import BLOCK_BYTES, GgufIndex  # numpy: only when a GGUF is opened

    try:
        index = GgufIndex(path)
    except OSError as exc:
        raise CorruptModel(f"{path.name} could not be read ({exc.strerror or exc})") from exc
    architecture = index.values.get("general.architecture")
    if not isinstance(architecture, str) or not architecture:
        raise CorruptModel(f"{path.name}: its metadata names no general.architecture")
    # transformers' GGUF loader (gguf.GGUFReader) refuses a type it does not know; say which tensor has it
    unknown = next((t for t in index.tensors.values() if t.kind not in BLOCK_BYTES), None)
    if unknown is not None:
        raise CorruptModel(f"{path.name}: tensor {unknown.name[:80]!r} has unknown ggml {unknown.kind}")
    return GgufInfo(path, architecture, sum(t.elements for t in index.tensors.values()))


def _numel(shape: list[int]) -> int:
    n = 1
    for dim in shape:
        n *= dim
    return n
