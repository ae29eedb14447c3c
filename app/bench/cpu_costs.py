"""What a CPU step costs against what the memory allows: v(n) for every n, bytes per step, a triad.

- `verify_curve`: one target pass over n = 1..n_max new tokens after a cached prompt, every n timed
  (interleaved, minimum over repeats), as v(n) = t(n) / t(1).
- `step_bytes`: the weight bytes one step reads: every linear's weight (packed or dense, the head
  included) and the other parameters, but only one row of the input embedding.
- `triad_gbps`: a STREAM-like triad a = b + s·c over arrays far larger than the caches, in this run,
  so "achieved GB/s per step" is set against this machine's bandwidth at this moment.
(large_target.py prices 1.7B- and 7B-shaped targets of random K-quant blocks with these.)
No Qt here.
"""

from __future__ import annotations

import time

import torch
from torch import nn

from app.engine.kv import forward, new_cache, rollback
from app.engine.kv import length as kv_length
from app.machine.packed import PackedLinear

N_MAX = 17
TRIAD_ELEMENTS = 2**25  # 128 MiB per float32 array, three arrays: far past any last-level cache


@torch.inference_mode()
def verify_curve(model, ids: torch.Tensor, n_max: int = N_MAX, reps: int = 3) -> list[float]:
    """Seconds of one pass over n = 1..n_max new tokens after ids[:-1] is cached (minimum over reps)."""
    cache = new_cache(model)
    forward(model, cache, ids[:-1], keep=1)
    held = kv_length(model, cache)
    best = [float("inf")] * n_max
    for rep in range(reps + 1):  # the first round warms the kernels and is not kept
        for n in range(1, n_max + 1):
            t0 = time.perf_counter()
            forward(model, cache, ids[-1:].repeat(n), keep=n)
            if rep:
                best[n - 1] = min(best[n - 1], time.perf_counter() - t0)
            rollback(cache, held)
    return best


def step_bytes(model: nn.Module) -> int:
    """Weight bytes one decoding step reads: one row of each embedding lookup, every linear's weight whole
    (a tied head reads the table whole; a packed one its own copy), and the other parameters once. On the
    native path: its own blocks, every matrix whole but an untied input embedding (one row a step)."""
    backend = getattr(model, "cache_backend", None)
    if backend is not None and hasattr(backend, "weights"):
        w = backend.weights
        return w.nbytes - (w.embed.nbytes if w.embed is not w.head else 0)
    total = 0
    for module in model.modules():
        if isinstance(module, PackedLinear):
            total += module.in_features * module.out_features * 2
        for p in module.parameters(recurse=False):
            row = isinstance(module, nn.Embedding)
            total += p.shape[-1] * p.element_size() if row else p.numel() * p.element_size()
    return total


def triad_gbps(elements: int = TRIAD_ELEMENTS, reps: int = 5) -> float:
    """Best GB/s of a = b + 3·c over float32 arrays of `elements` (24 bytes moved per element)."""
    a, b, c = torch.empty(elements), torch.rand(elements), torch.rand(elements)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.add(b, c, alpha=3.0, out=a)
        best = min(best, time.perf_counter() - t0)
    return 3 * 4 * elements / best / 1e9


def bandwidth_row(model, ids: torch.Tensor, triad: float, reps: int = 3) -> dict:
    """One step's time, bytes and GB/s; v(n) for n = 1..N_MAX; and the floor bytes ÷ triad bandwidth."""
    seconds = verify_curve(model, ids, N_MAX, reps)
    size = step_bytes(model)
    floor = size / (triad * 1e9)
    return {"step_ms": 1e3 * seconds[0], "v": [s / seconds[0] for s in seconds], "step_mib": size / 2**20,
            "gbps": size / seconds[0] / 1e9, "floor_ms": 1e3 * floor, "over_floor": seconds[0] / floor}
