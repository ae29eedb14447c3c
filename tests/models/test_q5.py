"""GGML's small blocks (Q4_0, Q5_0, Q5_1) read natively (q5.py, csrc/blocks.h): random blocks written on the
spot, with the gguf package's own dequantiser as the reference. The records hold the file's bytes and read
back exactly as gguf reads them; every build's embedding rows are gguf's values bit for bit, and every build's
product is the reference build's (generic C, panel_tile_ref) bit for bit on an odd shape, rows 1..17, threads
1..3, one digit and two. Planted twin: Q5_0's high bit read from the wrong bit of qh, caught by the
dequantisation check."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType
from gguf.quants import dequantize
from kquant_gguf import random_blocks

from app.native import builds, q5

BUILDS = builds()
pytestmark = pytest.mark.skipif(not BUILDS, reason="the native kernel is not built here")
TYPES = ["Q4_0", "Q5_0", "Q5_1"]
ROWS, K = 37, 224  # rows not whole panels, 7 blocks


def _matrix(name: str, rows: int = ROWS, k: int = K, seed: int = 0):
    raw = random_blocks(name, rows, k, np.random.default_rng(seed))
    data, n = q5.records(q5.KINDS[name], raw)
    return raw, data, dequantize(raw, GGMLQuantizationType[name])


@pytest.mark.parametrize("name", TYPES)
def test_records_hold_the_files_bytes_and_read_back_as_gguf_reads_them(name):
    raw, data, want = _matrix(name, rows=48)
    kind = q5.KINDS[name]
    assert np.array_equal(q5.dequantize(kind, data, len(raw)), want)
    assert data.nbytes == raw.nbytes  # 16 blocks a record, no byte widened
    raw, data, want = _matrix(name)  # rows padded to a whole panel
    assert np.array_equal(q5.dequantize(kind, data, len(raw)), want)


def test_a_high_bit_read_from_the_wrong_bit_is_caught(monkeypatch):
    raw, _, want = _matrix("Q5_0")
    honest = np.unpackbits

    def wrong_bit(a, axis=None, bitorder="big"):  # planted: qh's bits in the other order (bit 7 - i of byte j)
        return honest(a, axis=axis, bitorder="big" if bitorder == "little" else "little")

    monkeypatch.setattr(q5.np, "unpackbits", wrong_bit)
    data, n = q5.records(q5.KINDS["Q5_0"], raw)
    monkeypatch.undo()
    assert not np.array_equal(q5.dequantize(q5.KINDS["Q5_0"], data, n), want)


def _reference_build():
    generic = [b for b in BUILDS if b.isa().startswith("generic")]
    if not generic:
        pytest.skip("no generic build here")
    return generic[0]


@pytest.mark.parametrize("build", BUILDS, ids=[b.isa() for b in BUILDS])
@pytest.mark.parametrize("name", TYPES)
def test_every_build_gives_the_references_bits(build, name):
    raw, data, want = _matrix(name)
    kind, ref_build = q5.KINDS[name], _reference_build()
    rows = np.empty((ROWS, K), np.float32)
    build.rows(build.Matrix(kind, data.shape[0] * 16, K, data), np.arange(ROWS, dtype=np.int64), rows)
    assert np.array_equal(rows, want)  # an embedding's rows: gguf's values, bit for bit
    x = np.random.default_rng(1).standard_normal((17, K)).astype(np.float32)
    exact = x.astype(np.float64) @ want.T.astype(np.float64)
    for digits, tolerance in ((2, 1e-4), (1, 2e-2)):
        ref_mat = ref_build.Matrix(kind, data.shape[0] * 16, K, data, digits)
        ref = np.empty((17, ref_mat.n), np.float32)
        ref_build.matmul(ref_mat, x, ref, 1)
        assert np.abs(ref[:, :ROWS] - exact).max() < tolerance * np.abs(exact).max(), digits
        mat = build.Matrix(kind, data.shape[0] * 16, K, data, digits)
        for r in range(1, 18):
            for threads in (1, 2, 3):
                out = np.empty((r, mat.n), np.float32)
                build.matmul(mat, x[:r].copy(), out, threads)
                assert np.array_equal(out, ref[:r]), (digits, r, threads)



def test_a_gguf_of_small_blocks_loads_natively_and_speculation_equals_target_only(tmp_path, monkeypatch):
    """A Qwen2-shaped GGUF (hidden 96: no multiple of 256, as the 0.5B draft's 896) whose matrices are Q5_0,
    v Q4_0 and down Q5_1: every matrix held in its own type at the file's bytes (no Q8_0), and greedy
    speculation (prompt lookup; the model as its own draft, accepted whole) equal to target-only."""
    from kquant_gguf import BYTES, write_kquant_gguf

    from app.engine import DecodeParams, ModelDrafter, PromptLookupDrafter, generate
    from app.models import load_model
    from app.native import direct
    from app.native.blocks import QMatrix
    from app.native.gguf.model import parts_of

    types = {"default": "Q5_0", "attn_v": "Q4_0", "ffn_down": "Q5_1"}
    gguf = write_kquant_gguf(tmp_path / "q5.gguf", types, arch="qwen2", hidden=96, heads=2, kv_heads=1, ffn=160)
    index, config = direct.read(gguf)
    parts = parts_of(index, config)
    want = {"0.qkv": ("Q5_0", "Q5_0", "Q4_0"), "0.o": "Q5_0", "0.gate_up": "Q5_0", "0.down": "Q5_1",
            "embed": "Q5_0", "head": "Q5_0"}
    for part, kinds in want.items():
        mats = parts[part] if isinstance(parts[part], tuple) else (parts[part],)
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        assert tuple(m.name for m in mats) == kinds, part
        for m in mats:
            assert isinstance(m, QMatrix)
            assert m.nbytes == m.n * (m.k // 32) * BYTES[m.name], part  # the file's bytes (rows padded to 16)

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    loaded = load_model(str(gguf), device="cpu")
    assert loaded.kernels.startswith("Q4_0 + Q5_0 + Q5_1 · native"), loaded.kernels
    ids = loaded.encode_chat([{"role": "user", "content": "abcabc abcabc"}])
    params = DecodeParams(gamma=3, temperature=0, max_new_tokens=24, seed=0)
    expected = generate(loaded.model, ids, None, params, vocab_size=loaded.vocab_size).token_ids
    for drafter in (PromptLookupDrafter(), ModelDrafter(loaded.model)):
        got = generate(loaded.model, ids, drafter, params, vocab_size=loaded.vocab_size)
        assert got.token_ids == expected, type(drafter).__name__
    assert sum(r.accepted for r in got.rounds) > 0  # the model as its own draft: heard, not skipped
