"""Fuzz the native kernel's boundary under AddressSanitizer and UBSan: descriptors (dimensions, matrices,
vectors, each near its right size or off by a little) and passes (rows, cached slots, kept logits,
positions, token ids, visibility) built from the fuzzer's bytes. The kernel must refuse what does not fit
with ValueError or TypeError and run what it accepts without touching memory it was not handed; anything
else (another exception, a sanitizer report, an accepted descriptor that breaks an invariant) is a finding.

Run with the sanitized builds (tests/native/sanitized.py builds them; the test does it for you):

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
    SANITIZED_KERNELS=<folder> python tests/fuzz/fuzz_native.py -max_total_time=600
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

import atheris
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

with atheris.instrument_imports(include=["app.native"]):
    import app.native as native_package
    from app.native.descriptor import LAYER_FIELDS, MODEL_FIELDS

Q4_1, Q8_0, Q4_0, Q5_0, Q5_1 = 1, 2, 4, 6, 7
RECORD = {Q4_1: 320, Q8_0: 544, Q4_0: 288, Q5_0: 352, Q5_1: 384}
KINDS = list(RECORD)


def load_builds() -> list:
    """The sanitized builds in SANITIZED_KERNELS, else the installed ones (no sanitizer: a smoke run)."""
    folder = os.environ.get("SANITIZED_KERNELS")
    if not folder:
        return native_package.builds()
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = []
    for path in sorted(Path(folder).glob(f"_kernel_*{suffix}")):
        name = f"app.native.{path.name.removesuffix(suffix)}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if module.cpu_ok():
            found.append(module)
    return found


BUILDS = load_builds()


def _near(fdp, right: int) -> int:
    """Mostly the right value, sometimes off by a little or a lot (the boundary's interesting cases)."""
    pick = fdp.ConsumeIntInRange(0, 63)  # exhausted input reads 0: the right value
    if pick < 60:
        return right
    if pick < 63:
        return right + fdp.ConsumeIntInRange(-40, 40)
    return fdp.ConsumeIntInRange(-(2**31), 2**31 - 1)


def _floats(fdp, count: int) -> np.ndarray:
    count = min(max(count, 0), 1 << 16)  # a wrong length is as wrong at 65536 as at 2**31, and fits in memory
    raw = fdp.ConsumeBytes(min(4 * count, 256))
    out = np.resize(np.frombuffer(raw + bytes(-len(raw) % 4), np.float32), count) if raw else np.zeros(count, np.float32)
    special = fdp.ConsumeIntInRange(0, 7)
    if count and special == 7:
        out[fdp.ConsumeIntInRange(0, count - 1)] = np.nan  # a NaN in a norm or a table must stay a NaN, not a fault
    return np.ascontiguousarray(out if special >= 6 else np.nan_to_num(out, nan=0.5, posinf=1, neginf=-1), np.float32)


def _matrix(fdp, build, n: int, k: int):
    kind = KINDS[fdp.ConsumeIntInRange(0, len(KINDS) - 1)]
    if fdp.ConsumeIntInRange(0, 63) == 63:
        kind = fdp.ConsumeIntInRange(-3, 8)
    rows, inputs = _near(fdp, n), _near(fdp, k)
    size = (rows // 16) * (inputs // 32) * RECORD.get(kind, 544) if rows > 0 and inputs > 0 else 0
    size = max(0, min(_near(fdp, size), 1 << 22))
    data = np.frombuffer(fdp.ConsumeBytes(min(size, 4096)).ljust(size, b"\x11"), np.uint8)
    return build.Matrix(kind, rows, inputs, data)


@atheris.instrument_func  # the harness's own branches guide the fuzzer (the C side has none)
def _descriptor(fdp, build) -> dict:
    layers = fdp.ConsumeIntInRange(1, 2)
    heads = fdp.ConsumeIntInRange(1, 8)
    kv = fdp.ConsumeIntInRange(1, heads)
    head_dim = 2 * fdp.ConsumeIntInRange(1, 40)
    hidden = 32 * fdp.ConsumeIntInRange(1, 4)
    ffn = 32 * fdp.ConsumeIntInRange(1, 4)
    vocab = fdp.ConsumeIntInRange(1, 70)
    positions = fdp.ConsumeIntInRange(1, 48)
    qkv = (heads + 2 * kv) * head_dim
    fields = {"layers": layers, "hidden": _near(fdp, hidden), "heads": _near(fdp, heads), "kv_heads": _near(fdp, kv),
              "head_dim": _near(fdp, head_dim), "ffn": _near(fdp, ffn), "vocab": _near(fdp, vocab),
              "max_positions": _near(fdp, positions),
              "eps": fdp.ConsumeFloat() if fdp.ConsumeIntInRange(0, 63) == 63 else 1e-5}
    half = head_dim // 2
    fields["cos"] = _floats(fdp, _near(fdp, positions * half))
    fields["sin"] = _floats(fdp, _near(fdp, positions * half))
    fields["norm"] = _floats(fdp, _near(fdp, hidden))
    embed_rows = -(-vocab // 16) * 16
    fields["embed"] = _matrix(fdp, build, embed_rows, hidden)
    fields["head"] = fields["embed"] if fdp.ConsumeBool() else _matrix(fdp, build, embed_rows, hidden)
    parts = []
    for _ in range(max(0, min(_near(fdp, layers), 4))):
        part = {"attn_norm": _floats(fdp, _near(fdp, hidden)),
                "qkv": _matrix(fdp, build, qkv, hidden),
                "qkv_bias": _floats(fdp, _near(fdp, qkv)) if fdp.ConsumeBool() else None,
                "q_norm": _floats(fdp, _near(fdp, head_dim)) if fdp.ConsumeBool() else None,
                "k_norm": _floats(fdp, _near(fdp, head_dim)) if fdp.ConsumeBool() else None,
                "o": _matrix(fdp, build, hidden, heads * head_dim),
                "ffn_norm": _floats(fdp, _near(fdp, hidden)),
                "gate_up": _matrix(fdp, build, 2 * ffn, hidden),
                "down": _matrix(fdp, build, hidden, ffn)}
        assert tuple(part) == LAYER_FIELDS
        parts.append(part)
    fields["parts"] = parts
    return {name: fields[name] for name in MODEL_FIELDS}


@atheris.instrument_func
def _accepted_is_whole(fields: dict) -> None:
    """What the kernel accepted must be a model its pass fits (a logic mistake in the checks is a finding)."""
    heads, kv, hd = fields["heads"], fields["kv_heads"], fields["head_dim"]
    assert heads % kv == 0 and heads // kv <= 16 and hd % 2 == 0
    for part in fields["parts"]:
        assert part["qkv"].n == (heads + 2 * kv) * hd and part["qkv"].k == fields["hidden"]
        assert part["o"].n == fields["hidden"] and part["o"].k == heads * hd
        assert part["gate_up"].n == 2 * fields["ffn"] and part["down"].k == fields["ffn"]
        assert (part["q_norm"] is None) == (part["k_norm"] is None)  # Qwen3's norms come as a pair
        assert part["q_norm"] is None or part["q_norm"].size == part["k_norm"].size == hd
    assert fields["cos"].size == fields["max_positions"] * (hd // 2)
    assert fields["vocab"] <= min(fields["embed"].n, fields["head"].n)


@atheris.instrument_func
def _passes(fdp, build, model, fields: dict) -> None:
    layers, kvw = fields["layers"], fields["kv_heads"] * fields["head_dim"]
    cap = fdp.ConsumeIntInRange(1, 24)
    keys = np.zeros(layers * cap * kvw, np.float32)
    values = np.zeros(max(0, min(_near(fdp, keys.size), 1 << 16)), np.float32)
    held = 0
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        n = fdp.ConsumeIntInRange(1, 9)
        vocab, limit = fields["vocab"], fields["max_positions"]
        tokens = np.array([_near(fdp, fdp.ConsumeIntInRange(0, vocab - 1)) for _ in range(_near(fdp, n) % 12)], np.int64)
        positions = np.array([_near(fdp, min(held + r, limit - 1)) for r in range(n)], np.int64)
        masked = fdp.ConsumeIntInRange(0, held) if fdp.ConsumeBool() else _near(fdp, held)
        visible = None
        if fdp.ConsumeBool():
            visible = np.frombuffer(fdp.ConsumeBytes(max(0, _near(fdp, n * (held - masked + n)))), np.uint8).copy()
        keep = _near(fdp, fdp.ConsumeIntInRange(0, n))
        head_rows = fields["head"].n
        logits = np.zeros(max(0, _near(fdp, keep * head_rows)), np.float32) if keep else None
        hidden_out = np.zeros(max(0, _near(fdp, n * fields["hidden"])), np.float32) if fdp.ConsumeBool() else None
        try:
            build.forward(model, tokens, None, positions, _near(fdp, held), masked, visible, keys, values,
                          hidden_out, keep, logits, fdp.ConsumeIntInRange(1, 3))
        except (ValueError, TypeError):
            continue
        held += n


@atheris.instrument_func
def fuzz_one(data: bytes) -> None:
    if not BUILDS:
        return
    fdp = atheris.FuzzedDataProvider(data)
    build = BUILDS[fdp.ConsumeIntInRange(0, len(BUILDS) - 1)]
    try:
        fields = _descriptor(fdp, build)
        model = build.Model(**fields)
    except (ValueError, TypeError, OverflowError):
        return
    _accepted_is_whole(fields)
    _passes(fdp, build, model, fields)


if __name__ == "__main__":
    import tempfile

    findings = Path(tempfile.gettempdir()) / "speclens-fuzz-native"
    findings.mkdir(exist_ok=True)
    atheris.Setup([*sys.argv, "-timeout=20", "-rss_limit_mb=4096", f"-artifact_prefix={findings}/"], fuzz_one)
    atheris.Fuzz()
