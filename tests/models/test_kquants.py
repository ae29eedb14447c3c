"""K-quant blocks (Q4_K, Q5_K, Q6_K) on the native path, from random blocks written on the spot (the gguf
package quantizes no K type) with gguf's own dequantiser as the reference: the kernel's records read back
exactly as gguf reads the file's blocks, the embedding rows are gguf's values bit for bit, and every build's
product (one digit or two) is the float product of those weights, each row independent of the rows beside it.
Planted twin: records laid out with the sub-blocks of a super-block swapped are caught."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize
from kquant_gguf import random_blocks

from app.native import builds, kquants

BUILDS = builds()
pytestmark = pytest.mark.skipif(not BUILDS, reason="the native kernel is not built here")
TYPES = ["Q4_K", "Q5_K", "Q6_K"]


def _matrix(name: str, rows: int = 40, k: int = 512, seed: int = 0):
    raw = random_blocks(name, rows, k, np.random.default_rng(seed))
    data, n = kquants.records(kquants.KINDS[name], raw)
    return raw, data, dequantize(raw, GGMLQuantizationType[name])


@pytest.mark.parametrize("name", TYPES)
def test_records_read_back_as_ggufs_dequantiser_reads_the_blocks(name):
    raw, data, want = _matrix(name)
    assert np.array_equal(kquants.dequantize(kquants.KINDS[name], data, len(raw)), want)
    assert data.shape[-1] == kquants.RECORD_BYTES[kquants.KINDS[name]]


@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
@pytest.mark.parametrize("name", TYPES)
def test_every_builds_rows_and_products(build, name):
    raw, data, want = _matrix(name)
    kind = kquants.KINDS[name]
    rows = np.empty((len(raw), 512), np.float32)
    build.rows(build.Matrix(kind, data.shape[0] * 16, 512, data), np.arange(len(raw), dtype=np.int64), rows)
    assert np.array_equal(rows, want)  # an embedding's rows: gguf's values, bit for bit
    x = np.random.default_rng(1).standard_normal((7, 512)).astype(np.float32)
    ref = x.astype(np.float64) @ want.T.astype(np.float64)
    for digits, tolerance in ((2, 1e-4), (1, 2e-2)):
        mat = build.Matrix(kind, data.shape[0] * 16, 512, data, digits)
        out = np.empty((7, mat.n), np.float32)
        build.matmul(mat, x, out, 2)
        assert np.abs(out[:, : len(raw)] - ref).max() < tolerance * np.abs(ref).max(), digits
        for j in (0, 3, 6):  # a row alone equals the row in a pass of seven
            one = np.empty((1, mat.n), np.float32)
            build.matmul(mat, x[j : j + 1].copy(), one, 1)
            assert np.array_equal(one[0], out[j])


@pytest.mark.parametrize("name", TYPES)
def test_swapped_sub_blocks_are_caught(name):
    raw, data, want = _matrix(name)
    swapped = data.copy()
    swapped[..., 0:256], swapped[..., 256:512] = data[..., 256:512], data[..., 0:256]  # planted
    assert not np.array_equal(kquants.dequantize(kquants.KINDS[name], swapped, len(raw)), want)
