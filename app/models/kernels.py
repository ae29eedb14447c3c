"""The CPU linear path a model runs on (fp32, bf16, or bf16 with oneDNN-packed weights), chosen by timing.

At load, the model's own linear shapes are timed on each candidate path with random weights (a sample
of them larger than the last-level cache, so weights stream from memory as in a real step), at 1 row
(a target step) and at VERIFY_ROWS rows (a verify pass); the fastest by their sum runs. The choice is
cached per machine and shape set (cost_cache), so later loads time nothing. Without native bf16
(`packing.packing_supported()`), and for models whose linears fit in cache, fp32 runs untimed.
No Qt here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from . import cost_cache
from .attention import row_exact_unsupported, use_row_exact_attention
from .packed import PACK_HINTS, pack_linears, packed_linear, packing_supported

VERIFY_ROWS = 9  # a verify pass of γ = 8: the longest auto γ
SAMPLE_BYTES = 96 * 2**20  # bf16 bytes of linears timed per path: 3x a 32 MiB L3, so weights come from memory
SMALL_MODEL_BYTES = 16 * 2**20  # fp32 linears under this stay in cache: per-call overhead decides, keep fp32
REPS = 3


@dataclass(frozen=True)
class LinearPath:
    dtype: str  # "float32" or "bfloat16"
    packed: bool = False
    hint: int = 0  # oneDNN's packing hint (expected rows) when packed

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def label(self) -> str:
        """For people, as the status bar, the CLI and the bench show it: "bf16 · oneDNN packed"."""
        short = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(self.dtype, self.dtype)
        return f"{short} · oneDNN packed" if self.packed else short


@dataclass(frozen=True)
class PathChoice:
    path: LinearPath
    timings: dict  # label (with hint) -> [ms at 1 row, ms at VERIFY_ROWS rows]: estimated linears per step
    cached: bool
    reason: str  # one line: why this path


def dtype_label(dtype: torch.dtype) -> str:
    return LinearPath(str(dtype).removeprefix("torch.")).label


def candidates(dtype: torch.dtype | None) -> list[LinearPath]:
    """Paths worth timing for a requested dtype (None: any). Packed paths need native bf16."""
    paths = [] if dtype == torch.bfloat16 else [LinearPath("float32")]
    if dtype in (None, torch.bfloat16) and packing_supported():
        paths += [LinearPath("bfloat16")] + [LinearPath("bfloat16", True, h) for h in PACK_HINTS]
    elif dtype == torch.bfloat16:
        paths.append(LinearPath("bfloat16"))
    return paths


def linear_shapes(model: nn.Module) -> list[tuple[int, int]]:
    """(out, in) of every nn.Linear, in module order (the head included)."""
    return [(m.out_features, m.in_features) for m in model.modules() if type(m) is nn.Linear]


def choose_path(model: nn.Module, dtype: torch.dtype | None, use_cache: bool = True) -> PathChoice:
    """The fastest linear path for this model on this CPU, among `candidates(dtype)`."""
    paths = candidates(dtype)
    shapes = linear_shapes(model)
    dense = sum(o * i for o, i in shapes) * 4
    if len(paths) == 1:
        return PathChoice(paths[0], {}, False, f"{paths[0].label}: the only path for this dtype on this CPU")
    if dense < SMALL_MODEL_BYTES and dtype is None:
        return PathChoice(paths[0], {}, False, "fp32: the weights fit in cache, so bytes do not decide")
    if dtype is None and (why := row_exact_unsupported(model)) is not None:
        # bf16 verify rows would differ from single steps by ulps, and greedy speculation from target-only greedy
        return PathChoice(paths[0], {}, False, f"fp32: {why}, which has no row-exact bf16 attention here")
    key = cost_cache.key_of(["linear-path", *cost_cache.machine_parts(), str(dtype), shapes])
    if use_cache and (hit := cost_cache.read(key)) is not None:
        try:
            return PathChoice(LinearPath(**hit["path"]), hit["timings"], True, hit["reason"])
        except (KeyError, TypeError):
            pass
    exact = [p for p in paths if p.dtype == "float32" or rows_independent(p, shapes)] or paths[:1]
    timings = time_paths(shapes, exact)
    score = {p: sum(timings[p]) for p in exact}
    best = min(exact, key=score.__getitem__)
    others = ", ".join(f"{_name(p)} {score[p]:.1f}" for p in exact)
    dropped = "".join(f"; {_name(p)} left out: row-dependent" for p in paths if p not in exact)
    reason = f"{best.label}: fastest linears here (ms at 1 + {VERIFY_ROWS} rows: {others}{dropped})"
    table = {_name(p): [round(t, 3) for t in timings[p]] for p in exact}
    if use_cache:
        cost_cache.write(key, {"kind": "linear-path", "path": vars(best), "timings": table, "reason": reason})
    return PathChoice(best, table, False, reason)


def _name(path: LinearPath) -> str:
    return f"{path.label} h{path.hint}" if path.packed else path.label


@torch.inference_mode()
def time_paths(shapes: list[tuple[int, int]], paths: list[LinearPath], reps: int = REPS) -> dict:
    """path -> (ms, ms): estimated time of all the model's linears at 1 and VERIFY_ROWS rows.

    Timed on a sample (the largest linear, then linears in module order up to SAMPLE_BYTES), scaled by
    bytes: a linear this size streams its weight from memory, so its time follows its bytes.
    """
    largest = max(shapes, key=lambda s: s[0] * s[1])
    sample, size = [largest], largest[0] * largest[1]
    for shape in shapes:
        if size * 2 >= SAMPLE_BYTES:
            break
        sample.append(shape)
        size += shape[0] * shape[1]
    scale = sum(o * i for o, i in shapes) / size
    gen = torch.Generator().manual_seed(0)
    weights = [torch.randn(o, i, generator=gen) * 0.02 for o, i in sample]
    out = {}
    for path in paths:
        ws = [w.to(path.torch_dtype) for w in weights]
        if path.packed:
            ws = [torch.ops.mkldnn._reorder_linear_weight(w, path.hint) for w in ws]
        fn = _packed if path.packed else F.linear
        times = []
        for rows in (1, VERIFY_ROWS):
            xs = {i: torch.randn(rows, i, generator=gen).to(path.torch_dtype) for i in {i for _, i in sample}}
            best = float("inf")
            for rep in range(reps + 1):  # the first pass warms the kernels and is not kept
                t0 = time.perf_counter()
                for (_, i), w in zip(sample, ws, strict=True):
                    fn(xs[i], w)
                if rep:
                    best = min(best, time.perf_counter() - t0)
            times.append(best * scale * 1e3)
        out[path] = tuple(times)
        del ws
    return out


@torch.inference_mode()
def rows_independent(path: LinearPath, shapes: list[tuple[int, int]]) -> bool:
    """Whether each output row of the path's linears is bit-identical whatever the rows in the pass.

    A bf16 output is rounded to 8 bits, so a kernel that sums in another order for 1 row than for 9
    (measured here: bf16 F.linear and a bare packed kernel at 1536 inputs; packed_linear pads one row
    to two for this) gives a verify pass other logits than single steps, and greedy speculative output
    drifts from target-only greedy. Such a path is never chosen, however fast.
    """
    gen = torch.Generator().manual_seed(1)
    for out_features, in_features in sorted(set(shapes)):
        w = (torch.randn(out_features, in_features, generator=gen) * 0.02).to(path.torch_dtype)
        fn = _packed if path.packed else F.linear
        if path.packed:
            w = torch.ops.mkldnn._reorder_linear_weight(w, path.hint)
        x = torch.randn(VERIFY_ROWS, in_features, generator=gen).to(path.torch_dtype)
        whole = fn(x, w)
        if any(not torch.equal(fn(x[j : j + 1], w), whole[j : j + 1]) for j in range(VERIFY_ROWS)):
            return False
    return True


def _packed(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return packed_linear(x, w)


def apply_path(model: nn.Module, path: LinearPath) -> nn.Module:
    """The model in the path's dtype, its linears packed when the path says so (in place)."""
    if next(model.parameters()).dtype != path.torch_dtype:
        model = model.to(path.torch_dtype)
    if path.packed:
        pack_linears(model, path.hint)
    if path.dtype == "bfloat16":
        use_row_exact_attention(model)
    return model
