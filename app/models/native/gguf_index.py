"""A GGUF file's tensor index, read without parsing its metadata values.

gguf.GGUFReader builds every metadata field as numpy views, 5.2 of the 6.3 s a native load took for the
embedded model (its tokenizer is ~100k strings). The native path needs only where each tensor's blocks
lie, so this walks the header with struct, skipping the values, and maps the tensors it is asked for.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (version 2 and 3, little-endian).
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 30: "BF16"}
BLOCK_BYTES = {"Q4_1": (32, 20), "Q8_0": (32, 34), "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2)}  # (values, bytes)
_SCALARS = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # value type -> bytes
_STRING, _ARRAY, _UINT32 = 8, 9, 4


@dataclass(frozen=True)
class TensorInfo:
    name: str
    kind: str  # "Q4_1", "Q8_0", ... or "type N" for the rest
    shape: tuple[int, ...]  # GGUF order: the row length first
    offset: int  # from the file's start


class GgufIndex:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as header:
            if header[:4] != b"GGUF":
                raise ValueError(f"{self.path} is not a GGUF file")
            version, tensors, fields = struct.unpack_from("<IQQ", header, 4)
            if version < 2:
                raise ValueError(f"{self.path}: GGUF version {version} is not supported")
            at, alignment = 24, 32
            for _ in range(fields):
                key, at = _string(header, at)
                (kind,), at = struct.unpack_from("<I", header, at), at + 4
                if key == "general.alignment" and kind == _UINT32:
                    alignment = struct.unpack_from("<I", header, at)[0]
                at = _skip(header, at, kind)
            infos = []
            for _ in range(tensors):
                name, at = _string(header, at)
                (dims,), at = struct.unpack_from("<I", header, at), at + 4
                shape = struct.unpack_from(f"<{dims}Q", header, at)
                at += 8 * dims
                kind_id, offset = struct.unpack_from("<IQ", header, at)
                at += 12
                infos.append((name, GGML_TYPES.get(kind_id, f"type {kind_id}"), tuple(shape), offset))
        start = -(-at // alignment) * alignment
        self.tensors = {name: TensorInfo(name, kind, shape, start + offset) for name, kind, shape, offset in infos}
        self._data = np.memmap(self.path, dtype=np.uint8, mode="r")

    def rows(self, name: str) -> np.ndarray | None:
        """The tensor's bytes as [rows, bytes per row] (read-only, mapped), or None for a type without blocks here."""
        info = self.tensors[name]
        if info.kind not in BLOCK_BYTES:
            return None
        values, size = BLOCK_BYTES[info.kind]
        row_bytes = info.shape[0] // values * size
        rows = int(np.prod(info.shape[1:], dtype=np.int64)) if len(info.shape) > 1 else 1
        return self._data[info.offset : info.offset + rows * row_bytes].reshape(rows, row_bytes)


def _string(data: mmap.mmap, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", data, at)
    at += 8
    return data[at : at + length].decode("utf-8", errors="replace"), at + length


def _skip(data: mmap.mmap, at: int, kind: int) -> int:
    """The offset after a metadata value of this type (strings and arrays walked, nothing decoded)."""
    if kind in _SCALARS:
        return at + _SCALARS[kind]
    if kind == _STRING:
        return at + 8 + struct.unpack_from("<Q", data, at)[0]
    if kind == _ARRAY:
        inner, count = struct.unpack_from("<IQ", data, at)
        at += 12
        if inner in _SCALARS:
            return at + count * _SCALARS[inner]
        for _ in range(count):
            at = _skip(data, at, inner)
        return at
    raise ValueError(f"unknown GGUF metadata type {kind}")
