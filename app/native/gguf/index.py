"""A GGUF file's tensor index and scalar metadata, read without parsing its array values, and checked.

gguf.GGUFReader builds every metadata field as numpy views, most of a native load's time for the embedded
model (its tokenizer is ~49k strings). The native path needs only where each tensor's blocks lie and a few
scalars, so this walks the header with struct, skipping arrays without decoding them, and maps the tensors
it is asked for. The native kernel reads those bytes with no checks of its own, so every size and offset
in the header is checked here against the file: any malformed file is one CorruptModel naming the problem.
Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (version 2 and 3, little-endian).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import numpy as np

from app.errors import CorruptModel

# ggml type id -> (name, values per block, bytes per block), as gguf.constants' GGMLQuantizationType and
# GGML_QUANT_SIZES give them (a test keeps the two equal): importing gguf would add ~30 ms to every launch.
GGML_TYPE_SIZES = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}
GGML_TYPES = {kind: name for kind, (name, _, _) in GGML_TYPE_SIZES.items()}
BLOCK_BYTES = {name: (values, size) for name, values, size in GGML_TYPE_SIZES.values()}  # (values, bytes)

# metadata value type -> struct format of a scalar; 8 is a string, 9 an array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_SCALAR_BYTES = {kind: struct.calcsize(fmt) for kind, fmt in _SCALARS.items()}
_STRING, _ARRAY, _UINT32 = 8, 9, 4
_LEAST_BYTES = {**_SCALAR_BYTES, _STRING: 8, _ARRAY: 12}  # the fewest bytes a value of each type takes
_LEAST_FIELD, _LEAST_TENSOR = 8 + 4 + 1, 8 + 4 + 8 + 4 + 8  # key + type + a byte; name + 1 dim + type + offset
HEADER_BYTES = 24  # magic, version, tensor count, field count
MAX_DIMS = 4  # GGML_MAX_DIMS: the kernel's shapes have four slots
MAX_ELEMENTS = 2**40  # far above any model's tensor, far below what overflows an int64 byte count
MAX_ALIGNMENT = 2**20
MAX_NESTING = 8  # arrays of arrays: the format allows them, no model needs more than two


@dataclass(frozen=True)
class TensorInfo:
    name: str
    kind: str  # "Q4_1", "Q8_0", ... or "type N" for a type this table does not know
    shape: tuple[int, ...]  # GGUF order: the row length first
    offset: int  # from the file's start

    @property
    def elements(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n

    @property
    def nbytes(self) -> int | None:
        """Bytes of the tensor's data, or None for a type whose block size is not known here."""
        if self.kind not in BLOCK_BYTES:
            return None
        values, size = BLOCK_BYTES[self.kind]
        return self.elements // values * size


CHAT_TEMPLATE = "tokenizer.chat_template"


class GgufIndex:
    """The tensors (`tensors`: name -> TensorInfo) and the scalar and string metadata (`values`: key -> value)
    of a GGUF file, or of its bytes (then `name` labels it in messages). Arrays are skipped: `array_lengths`
    holds only their element counts. Raises CorruptModel for any header the file cannot back."""

    def __init__(self, source: Path | str | bytes, name: str | None = None) -> None:
        if isinstance(source, (bytes, bytearray, memoryview)):
            self.path, buffer = None, memoryview(source).cast("B")  # len() in bytes whatever the item type
            self.name = name or "GGUF bytes"
        else:
            self.path = Path(source)
            self.name = name or self.path.name
            buffer = _map(self.path)
        header = _Header(buffer, self.name)
        self.values, self.array_lengths, self.tensors = header.values, header.array_lengths, header.tensors
        self.tokenizer_spans = header.tokenizer_spans
        self._data = np.frombuffer(buffer, dtype=np.uint8)
        self._map = buffer if isinstance(buffer, mmap.mmap) else None

    def tokenizer_key(self) -> str:
        """A hash of the fields transformers converts the tokenizer from (tokenizer.* and the architecture, which
        picks its converter), but the chat template (a string kept in `values`, set on the tokenizer by its
        reader): two files that share it share their converted tokenizer (a draft and its target)."""
        digest = hashlib.sha256()
        for start, end in self.tokenizer_spans:
            digest.update(self._data[start:end].tobytes())
        return digest.hexdigest()[:32]

    def release(self, name: str) -> None:
        """Hand the tensor's pages back to the system once its bytes were copied (they are the file's: the next
        read maps them again), so a load holds the file's pages one tensor at a time, not all at once."""
        info = self.tensors.get(name)
        size = info.nbytes if info is not None else None
        if self._map is None or not size or not hasattr(mmap, "MADV_DONTNEED"):
            return
        page = mmap.PAGESIZE
        start = info.offset // page * page
        end = min(len(self._map), info.offset + size)
        with contextlib.suppress(OSError, ValueError):
            self._map.madvise(mmap.MADV_DONTNEED, start, end - start)

    def rows(self, name: str) -> np.ndarray | None:
        """The tensor's bytes as [rows, bytes per row] (read-only, mapped), or None for a type without blocks here."""
        info = self.tensors[name]
        if info.kind not in BLOCK_BYTES:
            return None
        values, size = BLOCK_BYTES[info.kind]
        row_bytes = info.shape[0] // values * size  # the header check made the row a whole number of blocks
        rows = info.elements // info.shape[0]
        return self._data[info.offset : info.offset + rows * row_bytes].reshape(rows, row_bytes)


def _map(path: Path) -> mmap.mmap | bytes:
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size < HEADER_BYTES:  # mmap refuses an empty file; the header check words it
            return f.read()
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _shown(text: str) -> str:
    """A key or name from the file, fit for a one-line message: escaped, quoted and clipped."""
    return repr(text if len(text) <= 80 else text[:77] + "...")


class _Header:
    """One pass over the header; every read is bounded by the buffer's size before it is made."""

    def __init__(self, data, name: str) -> None:
        self.data, self.name, self.size, self.at = data, name, len(data), 0
        if self.size < HEADER_BYTES:
            self.truncated("the header")
        if data[:4] != b"GGUF":
            self.fail(f"is not a valid GGUF file: it starts with {bytes(data[:4])!r}, not GGUF's magic", prefix=" ")
        version, tensors, fields = struct.unpack_from("<IQQ", data, 4)
        if version not in (2, 3) and struct.unpack_from(">I", data, 4)[0] in (2, 3):
            self.fail("is a big-endian GGUF; only little-endian files are read")
        if version not in (2, 3):
            self.fail(f"GGUF version {version} is not supported (only 2 and 3)")
        self.at = HEADER_BYTES
        room = self.size - HEADER_BYTES
        if fields > room // _LEAST_FIELD:
            self.fail(f"claims {fields} metadata fields, more than its {self.size} bytes can hold")
        if tensors > room // _LEAST_TENSOR:
            self.fail(f"claims {tensors} tensors, more than its {self.size} bytes can hold")
        self.values: dict[str, int | float | bool | str] = {}
        self.array_lengths: dict[str, int] = {}
        alignment = 32
        keys: set[str] = set()
        self.tokenizer_spans: list[tuple[int, int]] = []  # bytes of general.architecture and tokenizer.* fields
        for i in range(fields):
            field_start = self.at
            key = self.string(f"metadata key {i}", strict=True)
            if key in keys:
                self.fail(f"metadata key {_shown(key)} appears twice")
            keys.add(key)
            kind = self.unpack("<I", f"the type of {_shown(key)}")
            if key == "general.alignment":
                if kind != _UINT32:
                    self.fail(f"general.alignment has value type {kind} (must be uint32)")
                alignment = self.unpack("<I", "general.alignment")
                if alignment == 0 or alignment & (alignment - 1) or alignment > MAX_ALIGNMENT:
                    self.fail(f"general.alignment is {alignment} (must be a power of two up to {MAX_ALIGNMENT})")
                self.values[key] = alignment
            elif kind in _SCALARS:
                self.values[key] = self.unpack(_SCALARS[kind], _shown(key))
            elif kind == _STRING:
                self.values[key] = self.string(_shown(key), strict=False)
            elif kind == _ARRAY:
                self.array_lengths[key] = self.skip_array(_shown(key))
            else:
                self.fail(f"metadata {_shown(key)} has unknown value type {kind}")
            if (key.startswith("tokenizer.") or key == "general.architecture") and key != CHAT_TEMPLATE:
                self.tokenizer_spans.append((field_start, self.at))
        infos = [self.tensor_info(i) for i in range(tensors)]
        start = -(-self.at // alignment) * alignment
        self.tensors: dict[str, TensorInfo] = {}
        for name, kind, shape, offset in infos:
            if name in self.tensors:
                self.fail(f"tensor {_shown(name)} appears twice")
            if offset % alignment:
                self.fail(f"tensor {_shown(name)} has offset {offset}, not a multiple of the alignment {alignment}")
            info = TensorInfo(name, kind, shape, start + offset)
            end = info.offset + (info.nbytes or 0)  # a type not known here: only its start can be checked
            if end > self.size:
                self.fail(f"is truncated: tensor {_shown(name)} needs bytes {info.offset} to {end}, "
                          f"the file has {self.size}", prefix=" ")
            self.tensors[name] = info

    def fail(self, message: str, prefix: str = ": ") -> NoReturn:
        raise CorruptModel(f"{self.name}{prefix}{message}")

    def truncated(self, what: str) -> NoReturn:
        self.fail(f"is truncated: {what} runs past the end of the file ({self.size} bytes)", prefix=" ")

    def unpack(self, fmt: str, what: str):
        end = self.at + struct.calcsize(fmt)
        if end > self.size:
            self.truncated(what)
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at = end
        return value

    def string(self, what: str, *, strict: bool) -> str:
        length = self.unpack("<Q", what)
        if length > self.size - self.at:
            self.truncated(f"{what} (a string of {length} bytes)")
        raw = bytes(self.data[self.at : self.at + length])
        self.at += length
        try:
            return raw.decode("utf-8", errors="strict" if strict else "replace")
        except UnicodeDecodeError as exc:
            self.fail(f"{what} is not valid UTF-8 ({exc.reason} at byte {exc.start})")

    def skip_array(self, what: str) -> int:
        """Walk past an array value without decoding it, nested arrays by an explicit stack; its length."""
        data, size = self.data, self.size
        length = None
        left = [1]  # array headers still to read at each depth of nesting
        while left:
            if left[-1] == 0:
                left.pop()
                continue
            left[-1] -= 1
            inner = self.unpack("<I", f"an array type in {what}")
            count = self.unpack("<Q", f"an array length in {what}")
            length = count if length is None else length
            if inner not in _LEAST_BYTES:
                self.fail(f"metadata {what} holds an array of unknown value type {inner}")
            if count > (size - self.at) // _LEAST_BYTES[inner]:
                self.truncated(f"{what} (an array of {count} values of type {inner})")
            if inner in _SCALAR_BYTES:
                self.at += count * _SCALAR_BYTES[inner]
            elif inner == _STRING:
                at = self.at
                for _ in range(count):  # the hot loop: a tokenizer's vocabulary, one string at a time
                    if at + 8 > size:
                        self.truncated(f"a string in {what}")
                    at += 8 + struct.unpack_from("<Q", data, at)[0]
                if at > size:
                    self.truncated(f"a string in {what}")
                self.at = at
            elif len(left) >= MAX_NESTING:
                self.fail(f"metadata {what} nests arrays more than {MAX_NESTING} deep")
            else:
                left.append(count)
        return length

    def tensor_info(self, i: int) -> tuple[str, str, tuple[int, ...], int]:
        name = self.string(f"the name of tensor {i}", strict=True)
        what = f"tensor {_shown(name)}"
        dims = self.unpack("<I", f"the dimension count of {what}")
        if not 1 <= dims <= MAX_DIMS:
            self.fail(f"{what} has {dims} dimensions (must be 1 to {MAX_DIMS})")
        shape = tuple(self.unpack("<Q", f"the shape of {what}") for _ in range(dims))
        elements = 1
        for dim in shape:
            if dim == 0:
                self.fail(f"{what} has a zero dimension {list(shape)}")
            elements *= dim
            if elements > MAX_ELEMENTS:
                self.fail(f"{what} has shape {list(shape)}, more than {MAX_ELEMENTS} elements")
        kind_id = self.unpack("<I", f"the type of {what}")
        offset = self.unpack("<Q", f"the offset of {what}")
        kind = GGML_TYPES.get(kind_id, f"type {kind_id}")
        if kind in BLOCK_BYTES and shape[0] % BLOCK_BYTES[kind][0]:
            self.fail(f"{what} has rows of {shape[0]} values, not whole {kind} blocks of {BLOCK_BYTES[kind][0]}")
        return name, kind, shape, offset
