"""GGUF files made byte by byte, so a test can plant exactly one fault in an otherwise valid file."""

from __future__ import annotations

import struct

F32, F16, Q8_0 = 0, 1, 8  # ggml tensor types
U8, U32, STRING, ARRAY = 0, 4, 8, 9  # metadata value types


def string(text: str | bytes, length: int | None = None) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw) if length is None else length) + raw


def field(key: str | bytes, kind: int, payload: bytes) -> bytes:
    return string(key) + struct.pack("<I", kind) + payload


def u32(key: str, value: int) -> bytes:
    return field(key, U32, struct.pack("<I", value))


def text(key: str, value: str) -> bytes:
    return field(key, STRING, string(value))


def strings(key: str, values: list[str]) -> bytes:
    return field(key, ARRAY, struct.pack("<IQ", STRING, len(values)) + b"".join(string(v) for v in values))


def nested(key: str, depth: int) -> bytes:
    """An array of arrays `depth` deep, the innermost holding one uint8."""
    payload = struct.pack("<IQ", U8, 1) + b"\x07"
    for _ in range(depth - 1):
        payload = struct.pack("<IQ", ARRAY, 1) + payload
    return field(key, ARRAY, payload)


def tensor(name: str | bytes, shape: tuple[int, ...], kind: int, offset: int) -> bytes:
    return string(name) + struct.pack(f"<I{len(shape)}Q", len(shape), *shape) + struct.pack("<IQ", kind, offset)


def gguf(fields: list[bytes], tensors: list[bytes], data: bytes, *, version: int = 3, magic: bytes = b"GGUF",
         tensor_count: int | None = None, field_count: int | None = None, alignment: int = 32) -> bytes:
    """The file: header, fields, tensor infos, padding to `alignment`, then the data section."""
    counts = (len(tensors) if tensor_count is None else tensor_count, len(fields) if field_count is None else field_count)
    header = magic + struct.pack("<IQQ", version, *counts) + b"".join(fields) + b"".join(tensors)
    return header + b"\0" * (-len(header) % alignment) + data


BASE_FIELDS = [text("general.architecture", "llama"), u32("general.alignment", 32), strings("tokens", ["a", "bc"])]
# "a": 4 floats at 0 (16 bytes, padded to 32); "b": two Q8_0 rows of one 34-byte block each at 32
BASE_TENSORS = [tensor("a", (4,), F32, 0), tensor("b", (32, 2), Q8_0, 32)]
BASE_DATA = bytes(range(16)) + b"\0" * 16 + bytes(range(68))


def valid(fields: list[bytes] | None = None, tensors: list[bytes] | None = None, **kw) -> bytes:
    """The base file, with its field or tensor lists replaced."""
    return gguf(BASE_FIELDS if fields is None else fields, BASE_TENSORS if tensors is None else tensors, BASE_DATA, **kw)
