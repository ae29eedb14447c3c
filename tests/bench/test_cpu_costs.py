"""Bytes per step count each weight once (one embedding row); a packed bf16 model reads half. No timing asserts."""

from __future__ import annotations

import copy

import pytest
from tiny_models import tiny_model

from app.bench.cpu_costs import step_bytes
from app.machine import torch_path
from app.machine.packed import packing_supported
from app.machine.torch_path import LinearPath


def test_step_bytes_counts_every_weight_once_and_one_embedding_row():
    model = tiny_model()  # vocab 34, hidden 32, untied head
    embed = model.get_input_embeddings().weight
    everything = sum(p.numel() * 4 for p in model.parameters())
    assert step_bytes(model) == everything - (embed.numel() - embed.shape[1]) * 4


@pytest.mark.skipif(not packing_supported(), reason="no native bf16 on this CPU")
def test_a_packed_bf16_step_reads_half_the_bytes():
    model = tiny_model()
    packed = torch_path.apply_path(copy.deepcopy(model), LinearPath("bfloat16", True, 8))
    assert step_bytes(packed) * 2 == step_bytes(model)
