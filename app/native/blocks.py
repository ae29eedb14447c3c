"""Weights in the kernel's panel layout: 16 output channels x blocks of 32 inputs, each block's bytes in
the order vpdpbusd reads them (kernel.c says why). Q4_1 comes from a GGUF's own blocks, unchanged;
Q8_0 from a GGUF's Q8_0 blocks or from float weights; Q4_0, Q5_0 and Q5_1 (q5.py) and the K types
(kquants.py) from a GGUF's own blocks, re-laid. A matrix becomes a kernel build's own Matrix
(`QMatrix.native`), which checks that its records hold n x k in its type and keeps them alive."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import torch

from app.native import kquants, q5
from app.native.records import BLOCK, NAMES, PANEL, Q4_1, Q8_0, RECORD_BYTES, UNIT, field

# a record: 16 channels x a unit of inputs (32; 256 for the K types), their codes and scales (records.py's
# table, which every build's csrc/blocks.h is checked against): NAMES, RECORD_BYTES and UNIT by type
__all__ = ["BLOCK", "NAMES", "PANEL", "Q4_1", "Q8_0", "RECORD_BYTES", "UNIT", "QMatrix", "from_float", "from_gguf_blocks",
           "stack"]


class QMatrix:
    """n (padded to 16) x k weights. rows: the real output channels (n before padding)."""

    def __init__(self, kind: int, u: torch.Tensor, d: torch.Tensor, m: torch.Tensor) -> None:
        # u [N, kb, 32] uint8: Q4_1 q in 0..15, or Q8_0 q + 128; d, m [N, kb] (w = d u + m; Q8_0: m = -128 d)
        rows, kb, _ = u.shape
        pad = -rows % PANEL
        if pad:
            u = torch.cat([u, u.new_zeros(pad, kb, BLOCK)])
            d, m = torch.cat([d, d.new_zeros(pad, kb)]), torch.cat([m, m.new_zeros(pad, kb)])
        n = rows + pad
        p = n // PANEL
        if kind == Q4_1:
            nibbles = u[..., :16] | (u[..., 16:] << 4)  # byte i: element i low, element i + 16 high (as GGUF)
            q = nibbles.view(p, PANEL, kb, 4, 4).permute(0, 2, 3, 1, 4).reshape(p, kb, 256)  # [P, kb, j, c, 4]
        else:
            q = u.view(p, PANEL, kb, 8, 4).permute(0, 2, 3, 1, 4).reshape(p, kb, 512)  # [P, kb, g, c, 4]
        half = [d] if kind == Q8_0 else [d, m]  # Q8_0's m is -128 d, made in registers
        scales = [x.to(torch.float16).view(p, PANEL, kb).permute(0, 2, 1).contiguous().view(torch.uint8) for x in half]
        self.kind, self.rows, self.n, self.k = kind, rows, n, kb * BLOCK
        data = torch.empty(p, kb, RECORD_BYTES[kind], dtype=torch.uint8)  # one record per block, fields where records.py puts them
        for name, x in zip(("nibbles", "d", "m") if kind == Q4_1 else ("codes", "d"), [q, *scales], strict=True):
            data[..., field(kind, name)] = x.reshape(p, kb, -1)
        self.data = data
        self._native: dict[str, object] = {}

    @classmethod
    def of_data(cls, kind: int, rows: int, data: torch.Tensor) -> QMatrix:
        """A matrix from its panel records as `data` holds them ([P, units, record bytes] uint8, e.g. stored)."""
        mat = cls.__new__(cls)
        p, units, _ = data.shape
        mat.kind, mat.rows, mat.n, mat.k, mat.data = kind, rows, p * PANEL, units * UNIT[kind], data.contiguous()
        mat._native = {}
        return mat

    def native(self, build: ModuleType, digits: int = 2):
        """This matrix as `build`'s Matrix multiplying `digits` activation digits (2: ~16 bits, 1: 8 bits at
        half the arithmetic), made once a build and digit count (the kernel checks its size and type)."""
        key = f"{build.__name__} {digits}"
        made = self._native.get(key)
        if made is None:
            made = self._native[key] = build.Matrix(self.kind, self.n, self.k, self.data.numpy(), digits)
        return made

    @property
    def name(self) -> str:
        return NAMES[self.kind]

    @property
    def nbytes(self) -> int:
        return self.data.numel()

    def unpacked(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(u [n, kb, 32] uint8, d [n, kb], m [n, kb]) float32: the blocks as the constructor took them."""
        p, kb = self.n // PANEL, self.k // BLOCK
        q = self.data[..., field(self.kind, "nibbles" if self.kind == Q4_1 else "codes")]

        def f16(name: str) -> torch.Tensor:  # [n, kb]
            x = self.data[..., field(self.kind, name)].contiguous().view(torch.float16).float()  # [P, kb, 16]
            return x.permute(0, 2, 1).reshape(self.n, kb)

        d = f16("d")
        if self.kind == Q4_1:
            nib = q.reshape(p, kb, 4, PANEL, 4).permute(0, 3, 1, 2, 4).reshape(self.n, kb, 16)
            u = torch.cat([nib & 15, nib >> 4], dim=-1)
            m = f16("m")
        else:
            u = q.reshape(p, kb, 8, PANEL, 4).permute(0, 3, 1, 2, 4).reshape(self.n, kb, BLOCK)
            m = -128.0 * d
        return u[: self.rows], d[: self.rows], m[: self.rows]

    def dequantize(self) -> torch.Tensor:
        """The float32 weights [rows, k] these blocks hold."""
        if self.kind in kquants.NAMES:
            return torch.from_numpy(kquants.dequantize(self.kind, self.data.numpy(), self.rows))
        if self.kind in q5.NAMES:
            return torch.from_numpy(q5.dequantize(self.kind, self.data.numpy(), self.rows))
        u, d, m = self.unpacked()
        if self.kind == Q4_1:
            w = d.unsqueeze(-1) * u.float() + m.unsqueeze(-1)
        else:
            w = d.unsqueeze(-1) * (u.to(torch.int16) - 128).float()
        return w.reshape(self.rows, self.k)


def from_float(w: torch.Tensor) -> QMatrix:
    """Q8_0 blocks of float weights [N, K] (K a multiple of 32): d = amax / 127 per block, as GGUF's."""
    w = w.detach().float().cpu()
    rows, k = w.shape
    blocks = w.view(rows, k // BLOCK, BLOCK)
    d = (blocks.abs().amax(-1) / 127.0).to(torch.float16).float()  # stored as float16, as GGUF's
    inv = torch.where(d > 0, 1.0 / d, torch.zeros_like(d))
    q = torch.round(blocks * inv.unsqueeze(-1)).clamp(-127, 127).to(torch.int16)
    return QMatrix(Q8_0, (q + 128).to(torch.uint8), d, -128.0 * d)


def from_gguf_blocks(kind: str, raw: np.ndarray, k: int, rows: np.ndarray | None = None) -> QMatrix:
    """A GGUF tensor's raw blocks [N, bytes per row] (Q4_1, Q8_0, Q4_0, Q5_0, Q5_1 or a K type) as they are;
    rows: a row order."""
    for module in (kquants, q5):
        if kind in module.KINDS:
            data, n = module.records(module.KINDS[kind], raw, rows)
            return QMatrix.of_data(module.KINDS[kind], n, torch.from_numpy(data))
    data = torch.from_numpy(np.array(raw if rows is None else raw[rows]))  # a copy: the file stays read-only
    n, kb = data.shape[0], k // BLOCK
    if kind == "Q4_1":
        b = data.view(n, kb, 20)
        d, m = b[..., 0:2].contiguous().view(torch.float16), b[..., 2:4].contiguous().view(torch.float16)
        qs = b[..., 4:20]
        u = torch.cat([qs & 15, qs >> 4], dim=-1)  # element i in the low nibble of byte i, i + 16 in the high
        return QMatrix(Q4_1, u, d.view(n, kb).float(), m.view(n, kb).float())
    if kind == "Q8_0":
        b = data.view(n, kb, 34)
        d = b[..., 0:2].contiguous().view(torch.float16).view(n, kb).float()
        q = b[..., 2:34].contiguous().view(torch.int8).to(torch.int16)
        return QMatrix(Q8_0, (q + 128).to(torch.uint8), d, -128.0 * d)
    raise ValueError(f"no native blocks for GGUF type {kind}")


def stack(mats: list[QMatrix]) -> QMatrix | tuple[QMatrix, ...]:
    """The given matrices' rows in order (fused q/k/v, gate/up): one matrix where they share a kind (their
    panels one after another), else the matrices side by side (the kernel runs them as one projection)."""
    if any(m.n != m.rows for m in mats) or len({m.k for m in mats}) != 1:
        raise ValueError("fused matrices need rows a multiple of 16 and one input width")
    if len({m.kind for m in mats}) != 1:
        return tuple(mats)
    return QMatrix.of_data(mats[0].kind, sum(m.rows for m in mats), torch.cat([m.data for m in mats]))
