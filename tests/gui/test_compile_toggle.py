"""The "Compile decoding steps" toggle: warm-up before the next message with progress, then the same answer."""

from __future__ import annotations

from gui_helpers import send

import app.engine.static as static_module
from app.engine.static import StaticDecoder


def test_compiled_answer_equals_the_eager_one(qtbot, window, monkeypatch):
    # The window's plumbing with uncompiled static steps (seconds): compiling itself, and its equality
    # with eager decoding, is covered by tests/engine/test_static.py.
    monkeypatch.setattr(static_module, "StaticDecoder",
                        lambda model, compile: StaticDecoder(model, compile=False, min_capacity=64))
    window.controls.max_new.setValue(30)
    window.controls.gamma.setValue(2)
    send(qtbot, window, "hello there")
    eager = [t.token_id for t in window.recorder.tokens if t.emitted]

    steps = []
    window.worker.warm_progress.connect(lambda done, total: steps.append((done, total)))
    window.controls.compile.setChecked(True)
    assert not window.send_button.isEnabled()  # the first message waits for the warm-up
    qtbot.waitUntil(lambda: window.model.static is not None, timeout=120_000)
    assert window.send_button.isEnabled()
    assert steps and steps[-1][0] == steps[-1][1]
    assert "compiled" in window.progress_label.text()

    window.recorder.reset()
    window.history.new_chat()
    send(qtbot, window, "hello there")
    assert [t.token_id for t in window.recorder.tokens if t.emitted] == eager

    window.controls.compile.setChecked(False)
    assert window.model.static is None


def test_unsupported_pair_unticks_the_box_with_a_message(qtbot, window, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise ValueError("the static cache supports llama models, not gpt2")

    monkeypatch.setattr(static_module, "StaticDecoder", refuse)
    window.controls.compile.setChecked(True)
    qtbot.waitUntil(lambda: not window.controls.compile.isChecked(), timeout=30_000)
    assert window.model.static is None and window.send_button.isEnabled()
    assert "not gpt2" in window.banner.text()


def test_a_larger_gamma_is_compiled_before_the_next_message(qtbot, window, monkeypatch):
    monkeypatch.setattr(static_module, "StaticDecoder",
                        lambda model, compile: StaticDecoder(model, compile=False, min_capacity=64))
    window.controls.gamma.setValue(2)
    window.controls.compile.setChecked(True)
    qtbot.waitUntil(lambda: window.model.static is not None and window.model.idle, timeout=120_000)
    assert window.compile_flow.request.max_gamma == 2
    window.controls.gamma.setValue(1)  # within the compiled range: nothing to do
    assert window.model.static is not None
    window.controls.gamma.setValue(5)
    assert window.model.static is None and not window.send_button.isEnabled()  # Send waits for the warm-up
    qtbot.waitUntil(lambda: window.model.static is not None and window.model.idle, timeout=120_000)
    assert window.compile_flow.request.max_gamma == 5
    window.controls.gamma.setValue(0)  # γ auto: the live controller's whole range
    qtbot.waitUntil(lambda: window.model.static is not None and window.model.idle, timeout=120_000)
    assert window.compile_flow.request.max_gamma == window.model.auto.gamma_max


def test_compiling_the_packed_bf16_path_is_refused_before_it_starts(qtbot, window, monkeypatch):
    """Issue #28: on oneDNN-packed linears the toggle unticks with a one-line reason, before any compiling."""
    import pytest
    import torch

    from app.models import kernels
    from app.models.packed import packing_supported

    if not packing_supported():
        pytest.skip("this CPU has no native bf16 (oneDNN)")
    kernels.apply_path(window.model.target.model, kernels.LinearPath("bfloat16", packed=True, hint=8))  # in place
    monkeypatch.setattr(torch, "compile", lambda *a, **k: pytest.fail("compiling started"))
    steps = []
    window.worker.warm_progress.connect(lambda done, total: steps.append(done))
    window.controls.compile.setChecked(True)
    qtbot.waitUntil(lambda: not window.controls.compile.isChecked(), timeout=30_000)
    assert window.model.static is None and steps == []
    assert "oneDNN-packed" in window.banner.text() and "\n" not in window.banner.text()
