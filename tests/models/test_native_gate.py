"""The native path's load-time choice: its quality gate (native/quality.py) keeps it only when it is close to
float32, else loading falls back to torch's fastest path unless native was asked for; torch_path.choose_path
offers it only for a model the kernel runs as its family defines it; and `--kernels native` on a model it
does not run is refused in one line, never a traceback."""

from __future__ import annotations

import pytest
import torch
from tiny_models import char_tokenizer, noisy_copy, tiny_model

from app.machine import torch_path
from app.models import loading, route_torch
from app.native import active_build

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")

ASKED = torch_path.PathChoice(torch_path.NATIVE, {}, False, "native: asked for")


def _gate(model, forced: bool) -> tuple[torch_path.PathChoice, object]:
    return route_torch.native_path(model, char_tokenizer(), ASKED, None, forced=forced, report=lambda _: None)


@pytest.fixture
def perturbed_blocks(monkeypatch):
    """Planted: the native weights are another model's (the target plus noise), so native greedy tokens
    leave float32's (measured: 73% agreement against the gate's 99%)."""
    from app.native import build, model
    from app.native.descriptor import TWO_DIGITS

    monkeypatch.setattr(model, "weights_of",
                        lambda m, kernel=None, digits=TWO_DIGITS: build.from_transformers(noisy_copy(m, 0.3), kernel, digits))


def test_an_honest_native_model_passes_the_gate():
    from app.native.model import is_native

    target = tiny_model()  # 256 positions: fewer than the gate's held-out text, which is cut to fit
    choice, native = _gate(target, forced=False)
    assert choice.path.native and "quality:" in choice.reason and "top-1 agreement" in choice.reason
    assert is_native(native) and not is_native(target)  # nothing native hangs on transformers' model


def test_a_model_failing_the_gate_falls_back_to_torch(perturbed_blocks):
    from app.engine.kv import TransformersBackend, backend_for

    target = tiny_model()
    choice, native = _gate(target, forced=False)
    assert not choice.path.native and "native left out" in choice.reason, choice.reason
    assert native is None
    assert isinstance(backend_for(torch_path.apply_path(target, choice.path)), TransformersBackend)


def test_native_asked_for_is_kept_with_its_quality_said(perturbed_blocks):
    target = tiny_model()
    choice, _ = _gate(target, forced=True)
    assert choice.path.native and "quality:" in choice.reason
    assert float(choice.reason.split("quality: ")[1].split("%")[0]) < 99  # the failing figure is shown, not hidden


def test_loading_with_kernels_native_measures_the_gate(tiny_pair_dirs):
    loaded = loading.load_model(str(tiny_pair_dirs[0]), device="cpu", kernels="native", use_cache=False)
    assert "native" in loaded.kernels and "top-1 agreement" in loaded.profile.kernels.reason
    prompt = torch.tensor([5, 9, 12])
    backend = loaded.model.cache_backend
    assert backend.forward(backend.new_cache(), prompt, keep=1).shape == (1, 34)


def test_choose_path_offers_native_only_for_a_model_it_runs(monkeypatch):
    monkeypatch.setattr(torch_path, "SMALL_MODEL_BYTES", 0)  # time the tiny model's paths instead of keeping fp32
    assert torch_path.NATIVE in torch_path.candidates(None, native=True)
    assert torch_path.NATIVE not in torch_path.candidates(None) and torch_path.NATIVE not in torch_path.candidates(torch.float32, True)
    supported = torch_path.choose_path(tiny_model(), None, native=True)
    assert "native" in supported.timings, supported.reason
    gelu = tiny_model()
    gelu.config.hidden_act = "gelu"
    unsupported = torch_path.choose_path(gelu, None, native=True)
    assert not unsupported.path.native and "native" not in unsupported.timings, unsupported.reason


@pytest.mark.parametrize(("edit", "argv", "message"), [
    ({"hidden_act": "gelu"}, [], "--kernels native: the native kernel has SiLU only, not gelu"),
    ({}, ["--dtype", "float32"], "--kernels native: the native kernel chooses its own number format"),
])
def test_kernels_native_on_a_model_it_does_not_run_is_one_line(capsys, variant, edit, argv, message):
    from app.cli import main
    from app.errors import UnsupportedArchitecture

    folder = variant(config_update=edit)
    if not argv:
        with pytest.raises(UnsupportedArchitecture, match="SiLU only"):
            loading.load_model(str(folder), device="cpu", kernels="native")
    code = main(["generate", "--prompt", "hi", "--max-new-tokens", "3", "--target", str(folder), "--draft", "none",
                 "--kernels", "native", *argv])
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert code == 2 and last.startswith("speclens generate: error:") and message in last, err
    assert "Traceback" not in err
