"""llama.cpp's K-quant blocks (Q4_K, Q5_K, Q6_K: the GGUFs people run, Q4_K_M and its kin) in the kernel's
records (csrc/blocks.h says what each holds): unpacked from a GGUF's bytes with numpy, re-laid in panels of
16 channels, and read back (`dequantize`) for checks against the gguf package's own dequantiser.

Codes stay the file's; the 6-bit scales and mins of Q4_K and Q5_K become a byte each (the records are ~3%
larger than the file's blocks), so the kernel reads each block's scale with one load.
"""

from __future__ import annotations

import numpy as np

from app.native import records as layouts
from app.native.panels import chunked_records, in_panels
from app.native.records import PANEL, Q4_K, Q5_K, Q6_K, SUPER, field

NAMES = {kind: layouts.NAMES[kind] for kind in (Q4_K, Q5_K, Q6_K)}
KINDS = {name: kind for kind, name in NAMES.items()}
FILE_BYTES = {Q4_K: 144, Q5_K: 176, Q6_K: 210}  # a GGUF's block of 256
RECORD_BYTES = {kind: layouts.RECORD_BYTES[kind] for kind in NAMES}  # the kernel's record: 16 channels x 256 inputs


def _scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """llama.cpp's get_scale_min_k4 over [..., 12] bytes: (scale, min) [..., 8], 6 bits each."""
    s = scales.astype(np.uint8)
    sc = np.empty(s.shape[:-1] + (8,), np.uint8)
    mn = np.empty_like(sc)
    sc[..., :4], mn[..., :4] = s[..., 0:4] & 63, s[..., 4:8] & 63
    sc[..., 4:] = (s[..., 8:12] & 0x0F) | ((s[..., 0:4] >> 6) << 4)
    mn[..., 4:] = (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)
    return sc, mn


def unpack(kind: int, raw: np.ndarray) -> dict[str, np.ndarray]:
    """A GGUF tensor's K blocks [N, units x bytes] -> codes [N, units, 256] (unsigned: Q6_K's q + 32) and the
    scale fields: d [N, units] (and dmin) as float16 bits, sc / mn [N, units, 8] (Q6_K: sc [N, units, 16] int8)."""
    n = raw.shape[0]
    b = np.ascontiguousarray(raw).reshape(n, -1, FILE_BYTES[kind])
    units = b.shape[1]
    if kind == Q6_K:
        ql, qh, sc, d = b[..., :128], b[..., 128:192], b[..., 192:208], b[..., 208:210]
        q = np.empty((n, units, SUPER), np.uint8)
        for half in range(2):  # 128 values each: ql[64], qh[32]
            lo, hi = ql[..., 64 * half : 64 * half + 64], qh[..., 32 * half : 32 * half + 32]
            base = 128 * half
            q[..., base + 0 : base + 32] = (lo[..., :32] & 0x0F) | (((hi >> 0) & 3) << 4)
            q[..., base + 32 : base + 64] = (lo[..., 32:] & 0x0F) | (((hi >> 2) & 3) << 4)
            q[..., base + 64 : base + 96] = (lo[..., :32] >> 4) | (((hi >> 4) & 3) << 4)
            q[..., base + 96 : base + 128] = (lo[..., 32:] >> 4) | (((hi >> 6) & 3) << 4)
        return {"q": q, "d": d.copy().view(np.uint16)[..., 0], "sc": sc.copy().view(np.int8)}
    d, dmin, scales = b[..., 0:2], b[..., 2:4], b[..., 4:16]
    sc, mn = _scale_min(scales)
    if kind == Q4_K:
        qs = b[..., 16:144].reshape(n, units, 4, 32)
        q = np.stack([qs & 0x0F, qs >> 4], axis=3).reshape(n, units, SUPER)
    else:  # Q5_K
        qh, qs = b[..., 16:48], b[..., 48:176].reshape(n, units, 4, 32)
        low = np.stack([qs & 0x0F, qs >> 4], axis=3).reshape(n, units, 8, 32)
        bit = (qh[..., None, :] >> np.arange(8, dtype=np.uint8)[:, None]) & 1  # [N, units, 8 sub-blocks, 32]
        q = (low | (bit << 4)).reshape(n, units, SUPER)
    return {"q": q, "d": d.copy().view(np.uint16)[..., 0], "dmin": dmin.copy().view(np.uint16)[..., 0], "sc": sc,
            "mn": mn}



def _nibbles(q: np.ndarray) -> np.ndarray:
    """codes [P, 16, units, 8, 32] -> [P, units, 8, 256]: each block as Q4_1's nibble bytes (low nibbles)."""
    low = q & 0x0F
    byte = low[..., :16] | (low[..., 16:] << 4)  # [P, c, u, s, 16]: input i low, 16 + i high
    return byte.reshape(*byte.shape[:4], 4, 4).transpose(0, 2, 3, 4, 1, 5).reshape(q.shape[0], q.shape[2], 8, 256)


def _masks(q: np.ndarray, bit: int) -> np.ndarray:
    """codes [P, 16, units, 8, 32] -> [P, units, 8, 8 groups, 8 bytes]: bit c*4 + i of group g's mask is the
    given bit of input 4g + i of channel c (what the kernel turns into a vector with one mask load)."""
    bits = ((q >> bit) & 1).reshape(*q.shape[:4], 8, 4)  # [P, c, u, s, g, i]
    lanes = bits.transpose(0, 2, 3, 4, 1, 5).reshape(q.shape[0], q.shape[2], 8, 8, 64)  # [P, u, s, g, c*4 + i]
    return np.packbits(lanes, axis=-1, bitorder="little")


CHUNK_ROWS = 1024  # rows unpacked at a time: the unpacking's arrays (a byte a weight, and more) stay this small


def records(kind: int, raw: np.ndarray, rows_order: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """(records [P, units, record bytes] uint8, rows) of a GGUF tensor's K blocks [N, bytes per row], CHUNK_ROWS rows
    at a time (panels.chunked_records)."""
    return chunked_records(kind, raw, rows_order, FILE_BYTES[kind], CHUNK_ROWS, _records)


def _records(kind: int, raw: np.ndarray) -> np.ndarray:
    """records [P, units, record bytes] of K blocks [N, bytes per row] (rows padded to whole panels)."""
    fields = unpack(kind, raw)
    rows, units = fields["q"].shape[:2]
    q = in_panels(fields["q"], rows).reshape(-1, PANEL, units, 8, 32)  # [P, c, u, s, 32]
    p = q.shape[0]
    parts = {"nibbles": _nibbles(q)}
    if kind == Q5_K:
        parts["bit4"] = _masks(q, 4)
    if kind == Q6_K:
        parts["bits"] = np.stack([_masks(q, 4), _masks(q, 5)], axis=3)  # [s][plane][g]
        parts["scale"] = in_panels(fields["sc"], rows).transpose(0, 2, 3, 1).view(np.uint8)  # [P, u, 16 sub16, c]
        parts["d"] = _fp16(fields["d"], rows)
    else:
        parts["scale"], parts["min"] = (in_panels(fields[name], rows).transpose(0, 2, 3, 1) for name in ("sc", "mn"))  # [P, u, s, c]
        parts["d"], parts["dmin"] = _fp16(fields["d"], rows), _fp16(fields["dmin"], rows)
    data = np.empty((p, units, RECORD_BYTES[kind]), np.uint8)
    assert set(parts) == set(layouts.LAYOUTS[NAMES[kind]]["fields"]), (kind, set(parts))
    for name, x in parts.items():  # each field where the record's layout (records.py) puts it
        data[..., field(kind, name)] = x.astype(np.uint8, copy=False).reshape(p, units, -1)
    return data


def _fp16(bits: np.ndarray, rows: int) -> np.ndarray:
    """float16 bits [N, units] -> [P, units, 32] bytes: the 16 channels' values of each unit."""
    x = in_panels(bits, rows).transpose(0, 2, 1)  # [P, u, c]
    return np.ascontiguousarray(x).view(np.uint8).reshape(x.shape[0], x.shape[1], 2 * PANEL)


def dequantize(kind: int, data: np.ndarray, rows: int) -> np.ndarray:
    """The float32 weights [rows, k] records hold: the inverse of `records`, as the kernel's scalar path reads
    them (csrc/blocks.h), for checks against the gguf package."""
    p, units, _ = data.shape
    nib = data[..., field(kind, "nibbles")].reshape(p, units, 8, 4, PANEL, 4)  # [P, u, s, j, c, i]
    low = (nib & 0x0F).transpose(0, 4, 1, 2, 3, 5).reshape(p, PANEL, units, 8, 16)  # input 4j + i
    high = (nib >> 4).transpose(0, 4, 1, 2, 3, 5).reshape(p, PANEL, units, 8, 16)  # input 16 + 4j + i
    q = np.concatenate([low, high], axis=-1).astype(np.int32)  # [P, c, u, s, 32]

    def f16(name: str) -> np.ndarray:  # [P, c, u]
        return data[..., field(kind, name)].copy().view(np.float16).astype(np.float32).transpose(0, 2, 1)

    if kind == Q6_K:
        planes = data[..., field(kind, "bits")].reshape(p, units, 8, 2, 64)
        q = q | (mask_bits_of(planes[..., 0, :], p, units) << 4) | (mask_bits_of(planes[..., 1, :], p, units) << 5)
        sc = data[..., field(kind, "scale")].copy().view(np.int8).reshape(p, units, 16, PANEL).transpose(0, 3, 1, 2)
        d = f16("d")[..., None] * sc.astype(np.float32)  # [P, c, u, 16]
        w = d.reshape(p, PANEL, units, 8, 2, 1) * (q.reshape(p, PANEL, units, 8, 2, 16) - 32).astype(np.float32)
    else:
        if kind == Q5_K:
            q = q | (mask_bits_of(data[..., field(kind, "bit4")].reshape(p, units, 8, 64), p, units) << 4)
        sc = data[..., field(kind, "scale")].reshape(p, units, 8, PANEL).transpose(0, 3, 1, 2).astype(np.float32)
        mn = data[..., field(kind, "min")].reshape(p, units, 8, PANEL).transpose(0, 3, 1, 2).astype(np.float32)
        d, dmin = f16("d")[..., None] * sc, f16("dmin")[..., None] * mn  # [P, c, u, 8]
        w = d[..., None] * q.astype(np.float32) - dmin[..., None]
    return w.reshape(p * PANEL, units * SUPER)[:rows]


def mask_bits_of(masks: np.ndarray, p: int, units: int) -> np.ndarray:
    """masks [P, units, 8 sub-blocks, 64 bytes (8 groups x 8)] -> bits [P, 16, units, 8, 32] (int32)."""
    bits = np.unpackbits(masks.reshape(p, units, 8, 8, 8), axis=-1, bitorder="little")  # [P, u, s, g, 64]
    return bits.reshape(p, units, 8, 8, PANEL, 4).transpose(0, 4, 1, 2, 3, 5).reshape(p, PANEL, units, 8, 32).astype(
        np.int32)
