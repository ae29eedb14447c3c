"""The native path reads a GGUF's own blocks through its own tensor index (gguf_index.py), checked against
gguf's reader and against the weights transformers dequantised from the same file."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from app.models.embedded import embedded_gguf
from app.models.native.build import ModuleFloats, _GgufBlocks
from app.models.native.descriptor import Unfit
from app.models.native.gguf_index import GgufIndex


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


@pytest.mark.slow
def test_blocks_are_taken_only_where_they_hold_transformers_weights():
    """Planted twins: the q rows left in llama.cpp's order, and another layer's weight, are both refused."""
    from app.models import load_model

    model = load_model("default", dtype=torch.float32, kernels="torch").model
    config = model.config.get_text_config()
    source = _GgufBlocks(embedded_gguf(), config, ModuleFloats(model))
    q, k = "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"
    assert source.matrix("blk.0.attn_q.weight", q) is not None
    assert torch.equal(source.matrix("blk.0.attn_k.weight", k).dequantize(), model.get_parameter(k).detach().float())
    source.permute = False  # planted: the file's row order kept
    with pytest.raises(Unfit, match="q_proj"):
        source.matrix("blk.0.attn_q.weight", q)
    source.permute = True
    with pytest.raises(Unfit, match="blk.1.attn_q"):
        source.matrix("blk.1.attn_q.weight", q)  # planted: another tensor's blocks
