"""The CPU linear path: chosen by timing among row-exact paths, cached, and fp32 where bf16 cannot pay.
No timing asserts: timings are injected where the choice is checked."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from tiny_models import tiny_model

from app.machine import torch_path
from app.machine.packed import PackedLinear, packing_supported, weight_count
from app.machine.torch_path import LinearPath

PACKED8 = LinearPath("bfloat16", True, 8)


def test_no_native_bf16_keeps_fp32_untimed(monkeypatch):
    monkeypatch.setattr(torch_path, "packing_supported", lambda: False)
    monkeypatch.setattr(torch_path, "time_paths", lambda *a, **k: pytest.fail("nothing to time"))
    choice = torch_path.choose_path(tiny_model(), None)
    assert choice.path == LinearPath("float32") and choice.path.label == "fp32"


def test_small_models_stay_fp32(monkeypatch):
    monkeypatch.setattr(torch_path, "time_paths", lambda *a, **k: pytest.fail("cache-resident weights are not timed"))
    assert torch_path.choose_path(tiny_model(), None).path.dtype == "float32"


@pytest.mark.skipif(not packing_supported(), reason="no native bf16 on this CPU")
def test_the_fastest_row_exact_path_is_chosen_and_cached(monkeypatch):
    model = tiny_model()
    fake = {LinearPath("bfloat16"): (1.0, 1.0), **{LinearPath("bfloat16", True, h): (2.0 + h, 2.0) for h in (1, 4, 8, 16)}}
    monkeypatch.setattr(torch_path, "time_paths", lambda shapes, paths: {p: fake[p] for p in paths})
    # bf16 F.linear is "faster" here but its rows depend on the pass (as measured at 1536 inputs), so it
    # is never chosen.
    monkeypatch.setattr(torch_path, "rows_independent", lambda path, shapes: path.packed)
    choice = torch_path.choose_path(model, torch.bfloat16)
    assert choice.path == LinearPath("bfloat16", True, 1) and not choice.cached
    assert "row-dependent" in choice.reason
    monkeypatch.setattr(torch_path, "time_paths", lambda *a, **k: pytest.fail("the profile's choice not used"))
    again = torch_path.choose_path(model, torch.bfloat16, known=choice)  # as the machine profile holds it
    assert again.cached and again.path == choice.path
    assert again.path.label == "bf16 · oneDNN packed"


@pytest.mark.skipif(not packing_supported(), reason="no native bf16 on this CPU")
def test_packing_keeps_one_copy_and_the_tied_embedding():
    model = tiny_model()
    model.config.tie_word_embeddings = True
    model.lm_head.weight = model.model.embed_tokens.weight
    before = weight_count(model)
    packed = torch_path.apply_path(copy.deepcopy(model), PACKED8)
    linears = [m for m in packed.modules() if isinstance(m, PackedLinear)]
    assert len(linears) == 2 * 7 + 1 and not any(type(m) is torch.nn.Linear for m in packed.modules())
    assert packed.lm_head._tied is packed.model.embed_tokens.weight  # rows read back without unpacking
    assert weight_count(packed) == before
    assert packed.model.embed_tokens.weight.dtype == torch.bfloat16
    state = packed.state_dict()  # dense weights, so target layers still copy into a feature draft
    assert state["model.layers.0.mlp.down_proj.weight"].shape == (32, 64)


@pytest.mark.skipif(not packing_supported(), reason="no native bf16 on this CPU")
def test_a_path_whose_whole_pass_is_row_dependent_here_is_passed_over(monkeypatch):
    """Every linear alone may be row-exact while the model's pass is not (another CPU's attention or a kernel
    picked by row count): the probe on a twin of the model decides, and the next path runs."""
    from app.machine import row_probe

    model = tiny_model()
    fake = {LinearPath("float32"): (9.0, 9.0), **{LinearPath("bfloat16", True, h): (2.0 + h, 2.0) for h in (1, 4, 8, 16)}}
    monkeypatch.setattr(torch_path, "time_paths", lambda shapes, paths: {p: fake[p] for p in paths})
    monkeypatch.setattr(torch_path, "rows_independent", lambda path, shapes: path.packed)
    monkeypatch.setattr(torch_path, "SMALL_MODEL_BYTES", 0)
    probed = []

    def probe(twin):
        hint = next(m.hint for m in twin.modules() if isinstance(m, PackedLinear))
        probed.append(hint)
        return "a 9-row pass differs from its single steps" if hint == 1 else None

    monkeypatch.setattr(row_probe, "row_mismatch", probe)
    choice = torch_path.choose_path(model, None)
    assert choice.path == LinearPath("bfloat16", True, 4) and probed == [1, 4]
    assert "h1 left out: a 9-row pass differs from its single steps on this CPU" in choice.reason
    assert ": fastest exact linears here" in choice.reason  # not the fastest timed: h1 was
    monkeypatch.setattr(row_probe, "row_mismatch", lambda twin: "a 2-row pass differs from its single steps")
    assert torch_path.choose_path(model, None).path == LinearPath("float32")  # no bf16 path is exact: fp32


class _RowByRow(torch.nn.Module):
    """A linear that multiplies each row alone, in the one shape a single step uses: row-independent by
    construction on every CPU. split_above: rows beyond which it sums each row in two halves instead, the
    planted row-dependent twin (a kernel that changes its summation order with the row count, as oneDNN's
    packed bf16 path does on a CPU with AMX for a long prefill)."""

    def __init__(self, linear: torch.nn.Linear, split_above: int | None = None) -> None:
        super().__init__()
        self.weight, self.bias, self.split_above = linear.weight, linear.bias, split_above
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        if self.split_above is not None and rows.shape[0] > self.split_above:
            h = rows.shape[1] // 2
            out = F.linear(rows[:, :h], self.weight[:, :h]) + F.linear(rows[:, h:], self.weight[:, h:], self.bias)
        else:
            out = torch.cat([F.linear(row[None], self.weight, self.bias) for row in rows])
        return out.reshape(*x.shape[:-1], -1)


def _probe_twin(split_above: int | None = None):
    """The embedded model's shapes with 2 layers, every linear row by row, the row-exact attention."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from app.machine import row_probe
    from app.machine.attention import use_row_exact_attention

    config = LlamaConfig(vocab_size=4096, hidden_size=576, intermediate_size=1536, num_hidden_layers=3,
                         num_attention_heads=9, num_key_value_heads=3, head_dim=64, max_position_embeddings=256)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)  # only its class and config are read
    made = row_probe.twin(model)
    for parent in list(made.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                planted = split_above if name == "down_proj" else None
                setattr(parent, name, _RowByRow(child, planted))
    assert use_row_exact_attention(made)
    return made


def test_the_probe_passes_a_row_exact_twin_and_catches_row_dependent_ones():
    """The real probe, asked about twins built here rather than about this CPU's oneDNN (whose packed bf16 rows
    are exact on one CPU and not on another): a model whose rows are exact by construction passes; planted
    twins whose down projection sums in another order beyond 1 row (a verify pass) or beyond 17 rows (only
    the prefill, as AMX's packed path did) are caught, each by the check that sees it."""
    from app.machine import row_probe

    assert row_probe.row_mismatch(_probe_twin()) is None
    verify = row_probe.row_mismatch(_probe_twin(split_above=1))
    assert verify is not None and verify.startswith("a 2-row pass differs")
    prefill = row_probe.row_mismatch(_probe_twin(split_above=max(row_probe.PASSES)))
    assert prefill is not None and "prefill differs" in prefill


def test_the_probe_runs_at_every_thread_count_a_load_may_choose(monkeypatch):
    """oneDNN splits a small pass by thread count, so exactness at one count says nothing of another."""
    from app.machine import row_probe, threads

    seen = []

    def at_count(model):
        seen.append(torch.get_num_threads())
        return "a 5-row pass differs from its single steps" if seen[-1] == 2 else None

    before = torch.get_num_threads()
    monkeypatch.setattr(row_probe, "_mismatch", at_count)
    monkeypatch.setattr(threads, "possible", lambda: [1, 2])
    assert row_probe.row_mismatch(tiny_model()) == "a 5-row pass differs from its single steps at 2 threads"
    assert seen == [1, 2] and torch.get_num_threads() == before
    monkeypatch.setattr(threads, "possible", lambda: [1])
    assert row_probe.row_mismatch(tiny_model()) is None
