"""A GGUF's kernel weights as the kernel lays them out, kept beside its converted copy: building them
(unpacking the file's blocks and re-laying them in panels, fusing q/k/v and gate/up) takes ~1.3 s for the
embedded model, reading them back ~0.05 s. The file's name carries a hash of the code that lays them out,
so a change there never reads an older layout."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
from functools import cache
from pathlib import Path

import torch

from app.native import blocks
from app.native.blocks import QMatrix
from app.native.build import OPTIONAL


@cache
def layout() -> str:
    """A hash of the modules that decide the bytes (the panel records and the parts' names)."""
    from app.native import build, kquants, q5, records

    return hashlib.sha256(b"".join(_code_of(m) for m in (blocks, build, kquants, q5, records))).hexdigest()[:12]


def _code_of(module) -> bytes:
    """Its source; in a frozen build, which ships no source, its compiled code (the build fixes it anyway)."""
    try:
        return Path(module.__file__).read_bytes()
    except (OSError, TypeError):
        return marshal.dumps(module.__loader__.get_code(module.__name__))


def path_in(folder: Path) -> Path:
    return folder / f"speclens-native-{layout()}.safetensors"


def save(folder: Path, parts: dict) -> None:
    """Atomic (a temporary name of this process, then a rename). Raises OSError where the disk refuses (full, or
    over a quota): safetensors reports that as its own error type, which a caller would take for a damaged model.
    A failure only means the next launch builds them again."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    tensors, matrices = {}, {}
    for name, part in parts.items():
        side = part if isinstance(part, tuple) else None  # a projection's matrices side by side: "name#j"
        for key, value in ([(f"{name}#{j}", m) for j, m in enumerate(side)] if side else [(name, part)]):
            if isinstance(value, QMatrix):
                tensors[key] = value.data
                matrices[key] = [value.kind, value.rows]
            else:
                tensors[key] = value
    final = path_in(folder)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")  # two launches saving at once never mix bytes
    try:
        save_file(tensors, str(tmp), metadata={"matrices": json.dumps(matrices)})
        tmp.replace(final)
        for older in folder.glob("speclens-native-*.safetensors"):  # another layout's: never read again
            if older != final:
                older.unlink(missing_ok=True)
    except (OSError, SafetensorError) as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(f"could not keep {final.name} in {folder} ({exc})") from exc


def load(folder: Path, shapes: dict[str, tuple[int, ...]]) -> dict | None:
    """The parts saved for this folder's GGUF in this layout, or None where the file is missing, damaged or
    holds any part in another shape than `shapes` (build.expected_shapes: the config's) or another type."""
    from safetensors import SafetensorError, safe_open

    path = path_in(folder)
    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as f:
            matrices = json.loads(f.metadata()["matrices"])
            parts: dict = {}
            for key in f.keys():  # noqa: SIM118  safe_open is not a mapping
                name, _, j = key.partition("#")
                tensor = f.get_tensor(key)
                part = _matrix(key, matrices[key], tensor, shapes.get(name), bool(j)) if key in matrices else tensor
                if j:
                    parts.setdefault(name, {})[int(j)] = part
                else:
                    parts[name] = part
    except (OSError, SafetensorError, KeyError, ValueError, TypeError):
        return None
    for name, side in list(parts.items()):
        if isinstance(side, dict):  # "name#0", "name#1", ...: whole, in order, rows adding up to the config's
            mats = tuple(side[j] for j in range(len(side))) if set(side) == set(range(len(side))) else ()
            if not mats or sum(m.rows for m in mats) != shapes.get(name, (None,))[0]:
                return None
            parts[name] = mats
    return parts if _whole(parts, shapes) else None


def _matrix(name: str, label, data: torch.Tensor, want: tuple[int, ...] | None, side: bool) -> QMatrix:
    """A stored matrix whose label (kind, rows) and records fit the shape its config gives (a side-by-side
    part: the config's inputs, whole panels of rows), else ValueError."""
    if not (isinstance(label, list) and len(label) == 2 and all(type(x) is int for x in label)):
        raise ValueError(f"{name}: a damaged label")
    kind, rows = label
    record, unit = blocks.RECORD_BYTES.get(kind), blocks.UNIT.get(kind)
    if want is None or len(want) != 2 or record is None or data.dtype != torch.uint8 or want[1] % unit:
        raise ValueError(f"{name}: not the config's matrix")
    if (rows % blocks.PANEL or rows <= 0) if side else rows != want[0]:
        raise ValueError(f"{name}: rows the config does not give")
    if tuple(data.shape) != (-(-rows // blocks.PANEL), want[1] // unit, record):
        raise ValueError(f"{name}: records of another shape")
    return QMatrix.of_data(kind, rows, data)


def _whole(parts: dict, shapes: dict) -> bool:
    """Every part the config names (the q/k/v biases all or none) and nothing else, vectors float32 of their length."""
    groups = [{n for n in shapes if n.endswith(suffix)} for suffix in OPTIONAL]
    optional = set().union(*groups)
    if not set(shapes) - optional <= parts.keys() <= set(shapes):
        return False
    if any(0 < len(group & parts.keys()) < len(group) for group in groups):
        return False
    return all(isinstance(p, QMatrix | tuple) or (p.dtype == torch.float32 and tuple(p.shape) == shapes[n])
               for n, p in parts.items())
