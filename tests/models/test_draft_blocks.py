"""A draft model's matrices as Q4_0 (app.native.draft_blocks, which drafts.model_draft applies): each re-blocked
matrix holds exactly what ggml's reference quantiser (the gguf package's) makes of the kernel's own rows of it; a
model already in 4-bit blocks is left as it is; the result is kept in the file's cache entry and read back, and a
damaged copy is made again. Greedy speculation with such a draft is target-only greedy:
test_draft_digits.py and tests/pair (the real 0.5B, Q5_0 with a Q8_0 head)."""

from __future__ import annotations

import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize, quantize
from kquant_gguf import write_kquant_gguf

from app.native import active_build

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")
MIX = {"default": "Q5_0", "attn_v": "Q6_K", "ffn_down": "Q5_1", "output": "F32"}  # the head: Q8_0 of its floats


def _rows(part, build) -> torch.Tensor:
    from app.native.model import KernelRows

    mats = part if isinstance(part, tuple) else (part,)
    return torch.cat([KernelRows(m, build).weight for m in mats])


def _draft(tmp_path, monkeypatch, types):
    from app.models import load_model

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    gguf = write_kquant_gguf(tmp_path / "draft.gguf", types, layers=2, seed=3)
    return load_model(str(gguf), device="cpu", draft=True).model


def test_heavier_blocks_become_the_reference_quantisers_q4_0(tmp_path, monkeypatch):
    from app.native.build import matrices_of
    from app.native.draft_blocks import as_draft
    from app.native.records import Q4_0

    native = _draft(tmp_path, monkeypatch, MIX)
    light = as_draft(native)
    before, after = native.cache_backend.weights, light.cache_backend.weights
    assert {m.name for m in matrices_of(before.parts)} == {"Q5_0", "Q5_1", "Q6_K", "Q8_0"}
    assert {m.kind for m in matrices_of(after.parts)} == {Q4_0} and after.kinds == "Q4_0" and "Q4_0" in light.kernels
    assert after.digits == before.digits and after.build is before.build
    for name, part in before.parts.items():
        if not isinstance(after.parts[name], torch.Tensor):
            old = _rows(part, before.build).numpy()
            want = dequantize(quantize(old, GGMLQuantizationType.Q4_0), GGMLQuantizationType.Q4_0)
            assert torch.equal(_rows(after.parts[name], after.build), torch.from_numpy(want)), name
        else:
            assert torch.equal(after.parts[name], part), name  # norms, biases: the same values


def test_the_draft_holds_no_memory_of_the_original(tmp_path, monkeypatch):
    """The original's parts are views of its stored file (or the GGUF): a draft that shared one of them, even
    one norm, kept the whole mapping and every page the re-block read resident (463 MiB for the real 0.5B)."""
    from app.native.build import matrices_of
    from app.native.draft_blocks import as_draft

    def storages(weights) -> set[int]:
        tensors = [p for p in weights.parts.values() if isinstance(p, torch.Tensor)]
        return {t.untyped_storage().data_ptr() for t in [*tensors, *(m.data for m in matrices_of(weights.parts))]}

    for types in (MIX, {"default": "Q5_0", "attn_q": "Q4_0"}):  # the second keeps a Q4_0 matrix as it is
        folder = tmp_path / str(len(types))
        folder.mkdir()
        native = _draft(folder, monkeypatch, types)
        draft = as_draft(native)
        assert draft is not native
        assert not storages(native.cache_backend.weights) & storages(draft.cache_backend.weights), types


def test_a_model_in_four_bit_blocks_is_left_as_it_is(tmp_path, monkeypatch):
    from app.native.draft_blocks import as_draft

    native = _draft(tmp_path, monkeypatch, "Q4_0")
    assert as_draft(native) is native


def test_the_reblocked_draft_is_kept_and_a_damaged_copy_made_again(tmp_path, monkeypatch):
    from app.native import draft_blocks, stored

    native = _draft(tmp_path, monkeypatch, MIX)
    first = draft_blocks.as_draft(native)
    kept = stored.path_in(draft_blocks._folder(native))
    assert kept.is_file()
    made = draft_blocks.q4_0_rows

    def refuse(*args, **kwargs):
        raise AssertionError("re-blocked again although a kept copy exists")

    monkeypatch.setattr(draft_blocks, "q4_0_rows", refuse)
    again = draft_blocks.as_draft(native)
    for name, part in first.cache_backend.weights.parts.items():
        if not isinstance(part, torch.Tensor):
            assert torch.equal(part.data, again.cache_backend.weights.parts[name].data), name
    whole = kept.read_bytes()
    kept.write_bytes(whole[: len(whole) // 2])  # a copy cut short: made again, and kept whole again
    monkeypatch.setattr(draft_blocks, "q4_0_rows", made)
    remade = draft_blocks.as_draft(native)
    assert remade.cache_backend.weights.kinds == "Q4_0" and kept.read_bytes() == whole
