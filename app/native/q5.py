"""GGML's small blocks (Q4_0, Q5_0, Q5_1: 32 weights each) in the kernel's records (csrc/blocks.h says what
each holds): a GGUF's bytes re-laid in panels of 16 channels, no byte more than the file's (16 blocks of 18,
22 or 24 bytes a record), and read back (`dequantize`) for checks against the gguf package's dequantiser.

ggml's blocks: Q4_0 d (f16), qs[16] (input i the low nibble of byte i, i + 16 the high), w = d (q - 8);
Q5_0 d, qh (4 bytes: bit i of the little-endian word is bit 4 of input i), qs, w = d (q - 16); Q5_1 d, m,
qh, qs, w = d q + m. The records keep the codes unsigned (q in 0..15 or 0..31, what vpdpbusd multiplies) with
m = -8 d or -16 d made by the kernel (exact: d q + m is d (q - 8) to the bit)."""

from __future__ import annotations

import numpy as np

from app.native import records as layouts
from app.native.panels import chunked_records, in_panels
from app.native.records import BLOCK, PANEL, Q4_0, Q5_0, Q5_1, field

NAMES = {kind: layouts.NAMES[kind] for kind in (Q4_0, Q5_0, Q5_1)}
KINDS = {name: kind for kind, name in NAMES.items()}
FILE_BYTES = {Q4_0: 18, Q5_0: 22, Q5_1: 24}  # a GGUF's block of 32
RECORD_BYTES = {kind: layouts.RECORD_BYTES[kind] for kind in NAMES}  # 16 channels x 32 inputs: 16 blocks' bytes
OFFSET = {Q4_0: 8, Q5_0: 16, Q5_1: 0}  # w = d (q - offset), or d q + m for Q5_1
CHUNK_ROWS = 4096  # rows re-laid at a time (a byte a weight for the chunk's codes at most)


def unpack(kind: int, raw: np.ndarray) -> dict[str, np.ndarray]:
    """A GGUF tensor's blocks [N, kb x bytes] -> q [N, kb, 32] (unsigned codes), d (and m) [N, kb] float16 bits."""
    n = raw.shape[0]
    b = np.ascontiguousarray(raw).reshape(n, -1, FILE_BYTES[kind])
    at = 4 if kind == Q5_1 else 2
    qs = b[..., at + (4 if kind != Q4_0 else 0) :]  # [N, kb, 16]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # input i low nibble of byte i, i + 16 high
    if kind != Q4_0:
        qh = b[..., at : at + 4]  # the little-endian word's bit i: input i
        q |= ((np.unpackbits(qh, axis=-1, bitorder="little")) << 4).astype(np.uint8)
    out = {"q": q, "d": b[..., 0:2].copy().view(np.uint16)[..., 0]}
    if kind == Q5_1:
        out["m"] = b[..., 2:4].copy().view(np.uint16)[..., 0]
    return out



def records(kind: int, raw: np.ndarray, rows_order: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """(records [P, units, record bytes] uint8, rows) of a GGUF tensor's blocks [N, bytes per row], CHUNK_ROWS rows
    at a time (panels.chunked_records)."""
    return chunked_records(kind, raw, rows_order, FILE_BYTES[kind], CHUNK_ROWS, _records)


def _records(kind: int, raw: np.ndarray) -> np.ndarray:
    fields = unpack(kind, raw)
    rows, kb = fields["q"].shape[:2]
    q = in_panels(fields["q"], rows)  # [P, c, kb, 32]
    p = q.shape[0]
    low = q & 0x0F
    byte = (low[..., :16] | (low[..., 16:] << 4)).reshape(p, PANEL, kb, 4, 4)  # [P, c, kb, j, i]
    parts = {"nibbles": byte.transpose(0, 2, 3, 1, 4)}  # [P, kb, j, c, i]
    if kind != Q4_0:  # bit c*4 + i of group g's mask: bit 4 of input 4g + i of channel c
        bits = ((q >> 4) & 1).reshape(p, PANEL, kb, 8, 4).transpose(0, 2, 3, 1, 4).reshape(p, kb, 8, 64)
        parts["bit4"] = np.packbits(bits, axis=-1, bitorder="little")
    for name in ("d", "m") if kind == Q5_1 else ("d",):
        x = np.ascontiguousarray(in_panels(fields[name], rows).transpose(0, 2, 1))  # [P, kb, c]
        parts[name] = x.view(np.uint8)
    data = np.empty((p, kb, RECORD_BYTES[kind]), np.uint8)
    assert set(parts) == set(layouts.LAYOUTS[NAMES[kind]]["fields"]), (kind, set(parts))
    for name, x in parts.items():  # each field where records.py puts it
        data[..., field(kind, name)] = x.reshape(p, kb, -1)
    return data


def codes(kind: int, data: np.ndarray) -> np.ndarray:
    """The unsigned codes [P*16, kb, 32] records hold (as the kernel's code_of reads them)."""
    p, kb, _ = data.shape
    nib = data[..., field(kind, "nibbles")].reshape(p, kb, 4, PANEL, 4).transpose(0, 3, 1, 2, 4).reshape(p * PANEL, kb, 16)
    q = np.concatenate([nib & 0x0F, nib >> 4], axis=-1)
    if kind != Q4_0:
        bits = np.unpackbits(data[..., field(kind, "bit4")].reshape(p, kb, 8, 8), axis=-1, bitorder="little")
        q |= (bits.reshape(p, kb, 8, PANEL, 4).transpose(0, 3, 1, 2, 4).reshape(p * PANEL, kb, BLOCK) << 4).astype(np.uint8)
    return q


def dequantize(kind: int, data: np.ndarray, rows: int) -> np.ndarray:
    """The float32 weights [rows, k] records hold, as ggml computes them: d (q - 8), d (q - 16), d q + m."""
    p, kb, _ = data.shape
    q = codes(kind, data).astype(np.float32)

    def f16(name: str) -> np.ndarray:  # [P*16, kb, 1]
        x = data[..., field(kind, name)].copy().view(np.float16).astype(np.float32)  # [P, kb, c]
        return x.transpose(0, 2, 1).reshape(p * PANEL, kb, 1)

    d = f16("d")
    w = d * q + f16("m") if kind == Q5_1 else d * (q - np.float32(OFFSET[kind]))
    return w.reshape(p * PANEL, kb * BLOCK)[:rows]
