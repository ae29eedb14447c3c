"""The typed boundary between Python and the kernel: one place names the descriptor's fields and every
build takes exactly those; a forced build runs; a pass runs in the default floating-point environment
whatever its caller's, so a caller's rounding mode or flush-to-zero cannot change a row's bits."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from pathlib import Path

import pytest
import torch

import app.native as native_package
from app import native
from app.native import builds, descriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "native"))
import odd_shapes  # noqa: E402

BUILDS = builds()
pytestmark = pytest.mark.skipif(not BUILDS, reason="the native kernel is not built here")
FE_UPWARD = 0x800  # x86's <fenv.h>
libm = ctypes.CDLL(ctypes.util.find_library("m"))


def test_every_build_takes_the_fields_descriptor_py_names():
    for build in BUILDS:
        assert descriptor.layout_mismatch(build) is None
        layout = build.layout()
        assert tuple(layout["model"]) == descriptor.MODEL_FIELDS and tuple(layout["layer"]) == descriptor.LAYER_FIELDS


def test_a_build_whose_fields_differ_is_refused_with_a_reason():
    class Older:
        @staticmethod
        def layout():
            return {"model": descriptor.MODEL_FIELDS[::-1], "layer": descriptor.LAYER_FIELDS}

    assert "differ" in descriptor.layout_mismatch(Older)
    assert "predates" in descriptor.layout_mismatch(object())


def test_a_build_whose_records_differ_is_refused_with_a_reason():
    from app.native import records

    good = BUILDS[0].layout()
    assert good["blocks"] == {name: {**spec, "fields": dict(spec["fields"])} for name, spec in records.LAYOUTS.items()}
    moved = {**good, "blocks": {**good["blocks"], "Q6_K": {**good["blocks"]["Q6_K"], "fields": {
        **good["blocks"]["Q6_K"]["fields"], "d": (3072, 32)}}}}

    class Moved:
        @staticmethod
        def layout():
            return moved

    assert "Q6_K" in descriptor.layout_mismatch(Moved)


@pytest.mark.parametrize("name", ["avx512", "avx2", "generic", "sse9"])
def test_a_forced_build_runs_or_says_why(monkeypatch, name):
    monkeypatch.setenv(native.FORCE, name)
    native._load.cache_clear()
    try:
        module, why = native.active_build(), native.unavailable()
        runs = {b.__name__.rsplit("_", 1)[-1] for b in BUILDS}
        if name in runs:
            assert module is not None and module.__name__.endswith(name) and why is None
        else:
            assert module is None and why
    finally:
        native._load.cache_clear()


@pytest.mark.skipif(sys.platform != "linux" or not hasattr(libm, "fesetround"), reason="glibc's fesetround")
@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
def test_a_callers_rounding_mode_and_flush_to_zero_change_no_bits(build):
    model = odd_shapes.tiny_model("group-8")
    backend = odd_shapes.backend_of(model, build)
    ids = torch.arange(9)
    with torch.inference_mode():
        before = backend.forward(backend.new_cache(), ids, keep=9)
    threads = native_package._threads
    try:
        native_package.set_threads(2)
        torch.set_flush_denormal(True)
        assert libm.fesetround(FE_UPWARD) == 0
        # the twin: this thread's own float arithmetic does round upward now
        assert torch.tensor(1.0) + torch.tensor(2.0**-30) > 1.0
        ran, off = build.fp_probe(2)
        assert ran >= 1 and off == 0
        with torch.inference_mode():
            assert torch.equal(backend.forward(backend.new_cache(), ids, keep=9), before)
    finally:
        libm.fesetround(0)
        torch.set_flush_denormal(False)
        native_package.set_threads(threads)


@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
@pytest.mark.parametrize("kind", ["Q4_1", "Q8_0"])
def test_every_builds_product_is_the_blocks_product_and_row_independent(build, kind):
    """Q4_1 (a GGUF's own nibbles, d and m) and Q8_0 blocks on every build: the kernel's rows are the float
    product of the dequantised blocks within the activations' rounding, and each row's bits do not depend on
    the rows beside it. Planted twin: the same blocks with one d changed give another product."""
    from app.native import blocks

    gen = torch.Generator().manual_seed(5)
    rows, k = 40, 96  # 40 output rows: padded to 48 inside the kernel
    if kind == "Q4_1":
        u = torch.randint(0, 16, (rows, k // 32, 32), generator=gen, dtype=torch.uint8)
        d = torch.rand(rows, k // 32, generator=gen) * 0.02
        m = -torch.rand(rows, k // 32, generator=gen) * 0.1
        mat = blocks.QMatrix(blocks.Q4_1, u, d.half().float(), m.half().float())
    else:
        mat = blocks.from_float(torch.randn(rows, k, generator=gen) * 0.05)
    x = torch.randn(7, k, generator=gen)
    out = torch.empty(7, mat.n)
    build.matmul(mat.native(build), x.numpy(), out.numpy(), 2)
    ref = x @ mat.dequantize().T
    assert (out[:, :rows] - ref).abs().max() < 1e-3 * ref.abs().max()
    for j in range(7):
        one = torch.empty(1, mat.n)
        build.matmul(mat.native(build), x[j : j + 1].contiguous().numpy(), one.numpy(), 1)
        assert torch.equal(one[0], out[j])
    u, d, m = mat.unpacked()
    d = d.clone()
    d[3, 1] *= 2
    twin = blocks.QMatrix(mat.kind, u, d, m)
    build.matmul(twin.native(build), x.numpy(), (changed := torch.empty(7, mat.n)).numpy(), 2)
    assert not torch.equal(changed[:, 3], out[:, 3]) and torch.equal(changed[:, 4], out[:, 4])
