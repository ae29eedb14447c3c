"""A draft model's weights as Q4_0 blocks, the lightest the kernel reads, for drafting.

A draft's precision changes only how often its tokens are accepted, never the output (acceptance reads the q
the draft sampled from), while every drafted token costs what reading and unpacking its weights cost. The real
pair's 0.5B (Q5_0 matrices, a Q8_0 head tied to its embedding, Q4_K and Q6_K here and there) re-blocked to
Q4_0: a drafted token 9.5 → 5.1 ms, c 0.41 → 0.22 of the 1.5B's step, α 0.78 → 0.75 on the code suite, 1.07× →
1.21× at γ 4 (AMD EPYC Zen 5, 2 cores, 2026-12-07; docs/real-pair.md).

Each matrix of a heavier kind is read back by the kernel (its own rows, dequantised) and quantised as ggml does
(the gguf package's reference quantiser), about a million weights at a time; the result is kept in the file's
conversion-cache entry, so a later launch reads it instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from app.native import blocks, conversion_cache, stored
from app.native.backend import NativeBackend
from app.native.build import assemble, expected_shapes, matrices_of
from app.native.model import KernelRows, NativeCausalLM
from app.native.record import Record
from app.native.records import Q4_0, Q4_1

LIGHT = {Q4_0, Q4_1}  # 4 bits a weight already (Q4_1: the embedded model's own blocks)
CHUNK_VALUES = 1 << 20  # weights dequantised and quantised at a time: the quantiser holds a few float copies of them
SUBFOLDER = "draft-q4_0"  # inside the file's conversion-cache entry


def is_light(native: NativeCausalLM) -> bool:
    """Every matrix already in 4-bit blocks."""
    return all(m.kind in LIGHT for m in matrices_of(native.cache_backend.weights.parts))


def as_draft(native: NativeCausalLM, use_cache: bool = True) -> NativeCausalLM:
    """The same model with every matrix heavier than 4 bits a weight as Q4_0 (itself where none is), over the
    same build and activation digits."""
    if is_light(native):
        return native
    weights = native.cache_backend.weights
    folder = _folder(native) if use_cache else None
    tied = "head" not in weights.parts
    parts = stored.load(folder, expected_shapes(native.config, tied)) if folder is not None else None
    if parts is None:
        parts = {name: _reblocked(part, weights.build) for name, part in weights.parts.items()}
        if folder is not None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
                stored.save(folder, parts)
            except OSError:
                pass  # the cache only saves time: a later launch re-blocks again (seconds)
    record = Record(native.fingerprint, native.weight_count, native.config.architectures[0])
    backend = NativeBackend(assemble(native.config, parts, weights.build, weights.digits))
    return NativeCausalLM(native.config, native.generation_config, None, None, backend, record, native.gguf).eval()


def _folder(native: NativeCausalLM) -> Path | None:
    return conversion_cache.entry_dir(native.gguf) / SUBFOLDER if native.gguf is not None else None


def _reblocked(part, build):
    """A part with its matrices as Q4_0 (a projection's side-by-side matrices then share a kind: one matrix)."""
    if isinstance(part, tuple):
        return blocks.stack([_reblocked(m, build) for m in part])
    # Copies, not the file's own tensors: the original's parts are views of its stored file, and one norm
    # shared with the draft kept the whole mapping alive, with every page the re-block read (463 MiB of the
    # real pair's 0.5B resident for the process's life).
    if isinstance(part, torch.Tensor):
        return part.clone()
    if not isinstance(part, blocks.QMatrix):
        return part
    if part.kind in LIGHT:
        return blocks.QMatrix.of_data(part.kind, part.rows, part.data.clone())
    return blocks.from_gguf_blocks("Q4_0", q4_0_rows(part, build), part.k)


def q4_0_rows(mat: blocks.QMatrix, build) -> np.ndarray:
    """The matrix's rows as GGUF Q4_0 blocks [rows, k / 32 x 18 bytes]: the kernel's own dequantised rows,
    quantised by the gguf package (ggml's reference rounding)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import quantize

    reader = KernelRows(mat, build)
    step = max(1, CHUNK_VALUES // mat.k)
    out = np.empty((mat.rows, mat.k // 32 * 18), np.uint8)
    for start in range(0, mat.rows, step):
        rows = reader.lookup(torch.arange(start, min(start + step, mat.rows))).numpy()
        out[start : start + len(rows)] = quantize(rows, GGMLQuantizationType.Q4_0)
    return out
