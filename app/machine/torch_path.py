"""The CPU linear path a model runs on (fp32, bf16, or bf16 with oneDNN-packed weights), chosen by timing.

At load, the model's own linear shapes are timed on each candidate path with random weights (a sample
of them larger than the last-level cache, so weights stream from memory as in a real step), at 1 row
(a target step) and at VERIFY_ROWS rows (a verify pass); the fastest by their sum runs. The choice is
kept in the model's machine profile (machine_profile.py), so later loads time nothing. Without native
bf16 (`packing.packing_supported()`), and for models whose linears fit in cache, fp32 runs untimed.
A new kind of path is a new candidate: `candidates` offers it, `time_paths` times it beside the others
(the profile's key names the candidates, so offering one re-measures). No Qt here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from app.machine import load as machine_load
from app.machine.clock import time_interleaved
from app.machine.load import Load
from app.machine.packed import PACK_HINTS, pack_linears, packed_linear, packing_supported

VERIFY_ROWS = 9  # a verify pass of γ = 8: the longest auto γ
SAMPLE_BYTES = 96 * 2**20  # bf16 bytes of linears timed per path: 3x a 32 MiB L3, so weights come from memory
SMALL_MODEL_BYTES = 16 * 2**20  # fp32 linears under this stay in cache: per-call overhead decides, keep fp32
REPS = 3


@dataclass(frozen=True)
class LinearPath:
    dtype: str  # "float32" or "bfloat16"
    packed: bool = False
    hint: int = 0  # oneDNN's packing hint (expected rows) when packed
    native: bool = False  # the native C model (app/native): the GGUF's own blocks, one call a pass
    digits: str = ""  # native only: the activation digits each matrix role multiplies (descriptor.Digits.code)

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def label(self) -> str:
        """For people, as the status bar, the CLI and the bench show it: "bf16 · oneDNN packed"."""
        if self.native:
            return "native"
        short = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(self.dtype, self.dtype)
        return f"{short} · oneDNN packed" if self.packed else short


@dataclass(frozen=True)
class PathChoice:
    path: LinearPath
    timings: dict  # label (with hint) -> [ms at 1 row, ms at VERIFY_ROWS rows]: estimated linears per step
    cached: bool
    reason: str  # one line: why this path
    load: Load | None = None  # the machine while the paths were timed; None when nothing was timed


def dtype_label(dtype: torch.dtype) -> str:
    return LinearPath(str(dtype).removeprefix("torch.")).label


NATIVE = LinearPath("float32", native=True)


def candidates(dtype: torch.dtype | None, native: bool = False) -> list[LinearPath]:
    """Paths worth timing for a requested dtype (None: any). Packed paths need native bf16; the native C
    model runs when no dtype is asked for, native is not refused (--kernels torch) and its kernel built."""
    from app.native import active_build

    paths = [] if dtype == torch.bfloat16 else [LinearPath("float32")]
    if dtype is None and native and active_build() is not None:
        paths.append(NATIVE)
    if dtype in (None, torch.bfloat16) and packing_supported():
        paths += [LinearPath("bfloat16")] + [LinearPath("bfloat16", True, h) for h in PACK_HINTS]
    elif dtype == torch.bfloat16:
        paths.append(LinearPath("bfloat16"))
    return paths


def linear_shapes(model: nn.Module) -> list[tuple[int, int]]:
    """(out, in) of every nn.Linear, in module order (the head included)."""
    return [(m.out_features, m.in_features) for m in model.modules() if type(m) is nn.Linear]


def choose_path(model: nn.Module, dtype: torch.dtype | None, known: PathChoice | None = None,
                native: bool = False) -> PathChoice:
    """The fastest linear path for this model on this CPU, among `candidates(dtype, native)`. known: the choice
    the machine profile holds for these candidates, reused as it is (the profile decides when it is stale).
    A native choice is provisional: loading measures its quality and falls back when it fails (native/quality.py)."""
    from app.native.build import native_support

    paths = candidates(dtype, native)
    why = native_support(model) if NATIVE in paths else None
    if why is None:
        return _choose_among(model, dtype, known, paths)
    paths.remove(NATIVE)
    choice = _choose_among(model, dtype, known, paths)
    note = f"; native left out: {why}"  # said, so a user who expected the native path learns why not
    return choice if note in choice.reason else replace(choice, reason=choice.reason + note)


def _choose_among(model: nn.Module, dtype: torch.dtype | None, known: PathChoice | None,
                  paths: list[LinearPath]) -> PathChoice:
    from app.machine.attention import row_exact_unsupported

    shapes = linear_shapes(model)
    dense = sum(o * i for o, i in shapes) * 4
    if len(paths) == 1:
        return PathChoice(paths[0], {}, False, f"{paths[0].label}: the only path for this dtype on this CPU")
    if dense < SMALL_MODEL_BYTES and dtype is None:
        return PathChoice(paths[0], {}, False, "fp32: the weights fit in cache, so bytes do not decide")
    if dtype is None and NATIVE not in paths and (why := row_exact_unsupported(model)) is not None:
        # bf16 verify rows would differ from single steps by ulps, and greedy speculation from target-only greedy
        return PathChoice(paths[0], {}, False, f"fp32: {why}, which has no row-exact bf16 attention here")
    if known is not None and known.path in paths:
        return PathChoice(known.path, known.timings, True, known.reason, known.load)
    exact = [p for p in paths if (p.dtype == "float32" and not p.native) or rows_independent(p, shapes)] or paths[:1]
    if dtype is None and row_exact_unsupported(model) is not None:
        exact = [p for p in exact if p.dtype == "float32"]  # bf16 attention would not be row-exact here
    with machine_load.watch() as watch:
        timings = time_paths(shapes, exact)
    score = {p: sum(timings[p]) for p in exact}
    others = ", ".join(f"{path_name(p)} {score[p]:.1f}" for p in exact)
    dropped = "".join(f"; {path_name(p)} left out: row-dependent" for p in paths if p not in exact)
    best, mismatches = _fastest_exact_model(model, sorted(exact, key=score.__getitem__))
    dropped += "".join(f"; {path_name(p)} left out: {why} on this CPU" for p, why in mismatches)
    # After a fallback the choice is not the fastest timed, only the fastest whose rows stayed exact
    verdict = "fastest linears here" if best == min(exact, key=score.__getitem__) else "fastest exact linears here"
    reason = f"{best.label}: {verdict} (ms at 1 + {VERIFY_ROWS} rows: {others}{dropped})"
    table = {path_name(p): [round(t, 3) for t in timings[p]] for p in exact}
    return PathChoice(best, table, False, reason, watch.load)


def _fastest_exact_model(model: nn.Module, ranked: list[LinearPath]) -> tuple[LinearPath, list]:
    """The first of the ranked paths whose whole forward keeps a pass's rows equal to single steps
    (row_probe, on a small twin of the model), and the (path, why) of those passed over. float32 is not
    probed: its rows differ by float32 ulps, which never flipped a token here, where bf16's 8-bit rounding does."""
    from app.machine import row_probe

    passed_over: list[tuple[LinearPath, str]] = []
    for path in ranked:
        if path.dtype != "bfloat16" or path.native:
            return path, passed_over
        why = row_probe.row_mismatch(apply_path(row_probe.twin(model), path))
        if why is None:
            return path, passed_over
        passed_over.append((path, why))
    # Only bf16 was asked for (--dtype bfloat16, a self-draft): the fastest, its rows' mismatch said in the reason
    return ranked[0], passed_over


def path_name(path: LinearPath) -> str:
    """The label with the packing hint: names a candidate in a timing table and in the profile's key."""
    return f"{path.label} h{path.hint}" if path.packed else path.label


@torch.inference_mode()
def time_paths(shapes: list[tuple[int, int]], paths: list[LinearPath], reps: int = REPS) -> dict:
    """path -> (ms, ms): estimated time of all the model's linears at 1 and VERIFY_ROWS rows.

    Timed on a sample (the largest linear, then linears in module order up to SAMPLE_BYTES), scaled by
    bytes: a linear this size streams its weight from memory, so its time follows its bytes. Every path
    and row count is timed in each repetition (clock.time_interleaved), so load falls on all alike.
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
    inputs = {i: torch.randn(VERIFY_ROWS, i, generator=gen) for i in {i for _, i in sample}}
    runs = {}
    for path in paths:
        if path.native:  # Q8_0 blocks of the same weights: a GGUF's 4-bit blocks are only fewer bytes
            from app.native import active_build, blocks

            mats = [blocks.from_float(w) for w in weights]
            for rows in (1, VERIFY_ROWS):
                pairs = [(inputs[i][:rows].contiguous(), mat) for (_, i), mat in zip(sample, mats, strict=True)]
                runs[path, rows] = partial(_native_linears, active_build(), [(x, m.native(active_build())) for x, m in pairs], rows)  # type: ignore[arg-type]  # active_build(): loaded, a native path is ranked
            continue
        ws = [w.to(path.torch_dtype) for w in weights]
        if path.packed:
            ws = [torch.ops.mkldnn._reorder_linear_weight(w, path.hint) for w in ws]
        fn = _packed if path.packed else F.linear
        for rows in (1, VERIFY_ROWS):
            xs = {i: x[:rows].to(path.torch_dtype) for i, x in inputs.items()}
            runs[path, rows] = partial(_all_linears, fn, [(xs[i], w) for (_, i), w in zip(sample, ws, strict=True)])
    best = time_interleaved(runs, reps=reps).best
    return {p: (best[p, 1] * scale * 1e3, best[p, VERIFY_ROWS] * scale * 1e3) for p in paths}


def _native_linears(native, pairs, rows: int) -> None:
    threads = torch.get_num_threads()
    for x, mat in pairs:
        out = torch.empty(rows, mat.n)
        native.matmul(mat, x.numpy(), out.numpy(), threads)


def _all_linears(fn, pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
    for x, w in pairs:
        fn(x, w)


@torch.inference_mode()
def rows_independent(path: LinearPath, shapes: list[tuple[int, int]]) -> bool:
    """Whether each output row of the path's linears is bit-identical whatever the rows in the pass.

    A bf16 output is rounded to 8 bits, so a kernel that sums in another order for 1 row than for 9
    (measured here: bf16 F.linear and a bare packed kernel at 1536 inputs; packed_linear pads one row
    to two for this) gives a verify pass other logits than single steps, and greedy speculative output
    drifts from target-only greedy. Such a path is never chosen, however fast.
    """
    gen = torch.Generator().manual_seed(1)
    if path.native:
        return _native_rows_independent(shapes, gen)
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


def _native_rows_independent(shapes: list[tuple[int, int]], gen: torch.Generator) -> bool:
    from app.native import active_build, blocks

    native = active_build()
    assert native is not None  # asked only where the native kernel loads
    for out_features, in_features in sorted(set(shapes)):
        if in_features % blocks.BLOCK:
            return False
        mat = blocks.from_float(torch.randn(out_features, in_features, generator=gen) * 0.02).native(native)
        x = torch.randn(VERIFY_ROWS, in_features, generator=gen)
        whole = torch.empty(VERIFY_ROWS, mat.n)
        native.matmul(mat, x.numpy(), whole.numpy(), 1)
        for j in range(VERIFY_ROWS):
            one = torch.empty(1, mat.n)
            native.matmul(mat, x[j : j + 1].contiguous().numpy(), one.numpy(), 2)
            if not torch.equal(one[0], whole[j]):
                return False
    return True


def _packed(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return packed_linear(x, w)


def apply_path(model: nn.Module, path: LinearPath) -> nn.Module:
    """The model in the path's dtype, its linears packed when the path says so (in place); on the native
    path the native model made from it (its float weights as Q8_0), which keeps only its float input rows of
    the module. descriptor.Unfit when the kernel does not run it."""
    if path.native:
        from app.native.descriptor import Digits
        from app.native.model import NativeCausalLM, from_transformers

        if isinstance(model, NativeCausalLM):
            return model
        return from_transformers(model, digits=Digits.of_code(path.digits))
    if next(model.parameters()).dtype != path.torch_dtype:
        model = model.to(path.torch_dtype)
    if path.packed:
        pack_linears(model, path.hint)
    if path.dtype == "bfloat16":
        from app.machine.attention import use_row_exact_attention

        use_row_exact_attention(model)
    return model
