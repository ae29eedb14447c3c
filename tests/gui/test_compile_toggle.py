"""The "Compile decoding steps" toggle: warm-up before the next message with progress, then the same answer.
The compile flow with its collaborators (the model flow's: compiled steps warm up after a load)."""

from __future__ import annotations

from gui_helpers import send

import app.engine.static as static_module
from app.engine.static import StaticDecoder


def test_compiled_answer_equals_the_eager_one(qtbot, model_rig, monkeypatch):
    # The model_rig's plumbing with uncompiled static steps (seconds): compiling itself, and its equality
    # with eager decoding, is covered by tests/engine/test_static.py.
    monkeypatch.setattr(static_module, "StaticDecoder",
                        lambda model, compile: StaticDecoder(model, compile=False, min_capacity=64))
    model_rig.controls.max_new.setValue(30)
    model_rig.controls.gamma.setValue(2)
    send(qtbot, model_rig, "hello there")
    eager = [t.token_id for t in model_rig.recorder.tokens if t.emitted]

    steps = []
    model_rig.worker.warm_progress.connect(lambda done, total: steps.append((done, total)))
    model_rig.controls.compile.setChecked(True)
    assert not model_rig.send_button.isEnabled()  # the first message waits for the warm-up
    qtbot.waitUntil(lambda: model_rig.model.static is not None, timeout=120_000)
    assert model_rig.send_button.isEnabled()
    assert steps and steps[-1][0] == steps[-1][1]
    assert "compiled" in model_rig.status.progress_label.text()

    model_rig.recorder.reset()
    model_rig.add_history()
    model_rig.history.new_chat()
    send(qtbot, model_rig, "hello there")
    assert [t.token_id for t in model_rig.recorder.tokens if t.emitted] == eager

    model_rig.controls.compile.setChecked(False)
    assert model_rig.model.static is None


def test_unsupported_pair_unticks_the_box_with_a_message(qtbot, model_rig, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise ValueError("the static cache supports llama models, not gpt2")

    monkeypatch.setattr(static_module, "StaticDecoder", refuse)
    model_rig.controls.compile.setChecked(True)
    qtbot.waitUntil(lambda: not model_rig.controls.compile.isChecked(), timeout=30_000)
    assert model_rig.model.static is None and model_rig.send_button.isEnabled()
    assert "not gpt2" in model_rig.status.banner.text()


def test_a_larger_gamma_is_compiled_before_the_next_message(qtbot, model_rig, monkeypatch):
    monkeypatch.setattr(static_module, "StaticDecoder",
                        lambda model, compile: StaticDecoder(model, compile=False, min_capacity=64))
    model_rig.controls.gamma.setValue(2)
    model_rig.controls.compile.setChecked(True)
    qtbot.waitUntil(lambda: model_rig.model.static is not None and model_rig.model.idle, timeout=120_000)
    assert model_rig.compile_flow.request.max_gamma == 2
    model_rig.controls.gamma.setValue(1)  # within the compiled range: nothing to do
    assert model_rig.model.static is not None
    model_rig.controls.gamma.setValue(5)
    assert model_rig.model.static is None and not model_rig.send_button.isEnabled()  # Send waits for the warm-up
    qtbot.waitUntil(lambda: model_rig.model.static is not None and model_rig.model.idle, timeout=120_000)
    assert model_rig.compile_flow.request.max_gamma == 5
    model_rig.controls.gamma.setValue(0)  # γ auto: the live controller's whole range
    qtbot.waitUntil(lambda: model_rig.model.static is not None and model_rig.model.idle, timeout=120_000)
    assert model_rig.compile_flow.request.max_gamma == model_rig.model.auto.gamma_max


def test_compiling_the_packed_bf16_path_is_refused_before_it_starts(qtbot, model_rig, monkeypatch):
    """Issue #28: on oneDNN-packed linears the toggle unticks with a one-line reason, before any compiling."""
    import pytest
    import torch

    from app.machine import torch_path
    from app.machine.packed import packing_supported

    if not packing_supported():
        pytest.skip("this CPU has no native bf16 (oneDNN)")
    torch_path.apply_path(model_rig.model.target.model, torch_path.LinearPath("bfloat16", packed=True, hint=8))  # in place
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiling started"))
    steps = []
    model_rig.worker.warm_progress.connect(lambda done, total: steps.append(done))
    model_rig.controls.compile.setChecked(True)
    qtbot.waitUntil(lambda: not model_rig.controls.compile.isChecked(), timeout=30_000)
    assert model_rig.model.static is None and steps == []
    assert "oneDNN-packed" in model_rig.status.banner.text() and "\n" not in model_rig.status.banner.text()
