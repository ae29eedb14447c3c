"""The native path reads a GGUF's own blocks through its own tensor index (gguf_index.py), checked against
gguf's reader and against the weights transformers dequantised from the same file."""

from __future__ import annotations

import numpy as np

from app.models.embedded import embedded_gguf
from app.native.gguf.index import GgufIndex


def test_the_index_maps_every_tensor_as_ggufs_reader_does():
    import gguf

    path = embedded_gguf()
    index = GgufIndex(path)
    reader = gguf.GGUFReader(str(path))
    assert set(index.tensors) == {t.name for t in reader.tensors}
    for tensor in reader.tensors:
        info = index.tensors[tensor.name]
        assert info.kind == tensor.tensor_type.name
        rows = index.rows(tensor.name)
        assert np.array_equal(rows, np.asarray(tensor.data).view(np.uint8).reshape(rows.shape[0], -1)), tensor.name


def test_each_matrix_is_checked_against_ggufs_own_dequantiser():
    """gguf_model.check_rows: sampled rows of the kernel's product against the same rows dequantised by the
    gguf package. Planted twins: the q rows left in llama.cpp's order, and another layer's blocks, both fail."""
    from app.native.gguf import model as gguf_model

    index = GgufIndex(embedded_gguf())
    config = gguf_model.config_of(index)
    heads = config.num_attention_heads
    order = gguf_model._reverse_permutation(index.tensors["blk.0.attn_q.weight"].shape[1], heads)
    q = gguf_model._matrix(index, "blk.0.attn_q.weight", order)
    assert gguf_model.check_rows(q, index, "blk.0.attn_q.weight", order) is None
    k = gguf_model._matrix(index, "blk.0.ffn_down.weight", None)
    assert gguf_model.check_rows(k, index, "blk.0.ffn_down.weight", None) is None
    unpermuted = gguf_model._matrix(index, "blk.0.attn_q.weight", None)  # planted: the file's row order kept
    assert "differs" in gguf_model.check_rows(unpermuted, index, "blk.0.attn_q.weight", order)
    other = gguf_model._matrix(index, "blk.1.attn_q.weight", order)  # planted: another tensor's blocks
    assert "differs" in gguf_model.check_rows(other, index, "blk.0.attn_q.weight", order)


def test_float_matrices_are_checked_against_their_q8_0_records_and_the_file(tmp_path):
    """A float tensor is held as Q8_0: the kernel's product must equal those records' (not the floats', which
    differ by the rounding), and the records must be within half a step of the file. Planted: another
    layer's records."""
    from models.tiny_gguf import write_tiny_gguf

    from app.native.gguf import model as gguf_model

    index = GgufIndex(write_tiny_gguf(tmp_path / "tiny.gguf"))
    assert index.tensors["blk.0.attn_output.weight"].kind == "F32"
    for name in ("blk.0.attn_q.weight", "blk.0.attn_output.weight", "blk.0.ffn_down.weight"):
        assert gguf_model.check_rows(gguf_model._matrix(index, name, None), index, name, None) is None
    other = gguf_model._matrix(index, "blk.1.attn_output.weight", None)
    assert "differ" in gguf_model.check_rows(other, index, "blk.0.attn_output.weight", None)
