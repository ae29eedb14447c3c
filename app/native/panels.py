"""What every GGUF block type's packing shares: rows padded to whole panels of 16 output channels, and a
tensor's records made a chunk of rows at a time into one array the size of the records (a load's memory: the
records, the file's pages, one chunk's unpacked codes)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from app.native.records import PANEL, RECORD_BYTES


def in_panels(x: np.ndarray, rows: int) -> np.ndarray:
    """[N, ...] -> [P, 16, ...], the rows padded with zeros to whole panels."""
    pad = -rows % PANEL
    if pad:
        x = np.concatenate([x, np.zeros((pad, *x.shape[1:]), x.dtype)])
    return x.reshape(-1, PANEL, *x.shape[1:])


def chunked_records(kind: int, raw: np.ndarray, rows_order: np.ndarray | None, file_bytes: int, chunk_rows: int,
                    make: Callable[[int, np.ndarray], np.ndarray]) -> tuple[np.ndarray, int]:
    """(records [P, units, record bytes] uint8, rows) of a tensor's blocks [N, bytes per row] (rows_order: the
    rows to take, in order), `make(kind, rows)` packing `chunk_rows` rows (whole panels) at a time."""
    rows = raw.shape[0] if rows_order is None else len(rows_order)
    units = raw.shape[1] // file_bytes
    out = np.empty((-(-rows // PANEL), units, RECORD_BYTES[kind]), np.uint8)
    for start in range(0, rows, chunk_rows):
        stop = min(rows, start + chunk_rows)
        picked = raw[start:stop] if rows_order is None else raw[rows_order[start:stop]]
        out[start // PANEL : -(-stop // PANEL)] = make(kind, picked)
    return out, rows
