"""The chat window against the engine: what is shown is what the engine did."""

from __future__ import annotations

from gui_helpers import send, slow_params

from app.engine import PromptLookupDrafter


def test_window_opens_with_the_pair_loaded(window):
    assert window.send_button.isEnabled()
    assert "CPU" in window.status.labels["device"].text()
    assert window.model.target.name in window.status.labels["models"].text()
    assert not window.status.banner.isVisible()


def test_swapping_the_draft_applies_to_the_next_message(qtbot, window, monkeypatch):
    model_drafter = window.model.drafter
    monkeypatch.setattr(window.controls, "params", slow_params(window, 0.01))
    window.input.setPlainText("first")
    window.chat_flow.send()
    window.controls.draft_chosen.emit("prompt-lookup")  # chosen while answering
    qtbot.waitUntil(lambda: not window.model.generating, timeout=30_000)
    assert window.conversation.messages[1].stats["draft"] == model_drafter.name
    qtbot.waitUntil(lambda: isinstance(window.model.drafter, PromptLookupDrafter), timeout=30_000)
    window.recorder.reset()
    send(qtbot, window, "second")
    assert window.conversation.messages[3].stats["draft"] == window.model.drafter.name
    assert all(t.status.value != "rejected" or t.q is not None for t in window.recorder.tokens)


def test_a_bad_target_is_reported_in_the_window(qtbot, data_dir):
    from app.gui.main_window import MainWindow

    win = MainWindow(target_spec=str(data_dir / "missing-model"), draft_spec="self")
    qtbot.addWidget(win)
    qtbot.waitUntil(lambda: win.status.banner.isVisibleTo(win), timeout=30_000)
    assert "missing-model" in win.status.banner.text()
    assert not win.send_button.isEnabled()


def test_the_step_through_builds_its_panels_before_the_first_round(qtbot, window):
    """Loading a pair with a draft schedules the position panels; each is built in its own event-loop turn."""
    step = window.step
    assert window.model.drafter is not None
    wanted = window.model.auto.gamma_max if window.model.auto is not None else window.controls.params().gamma
    qtbot.waitUntil(lambda: len(step.positions) >= wanted, timeout=20_000)
    assert not any(p.isVisible() for p in step.positions)
    step.prepare(wanted + 2)
    assert len(step.positions) == wanted  # nothing is built synchronously
    qtbot.waitUntil(lambda: len(step.positions) == wanted + 2, timeout=20_000)



def test_the_step_through_builds_no_panel_while_an_answer_runs(qtbot, window):
    """A panel is ~80 ms of GUI thread: built beside the worker's timed target-only steps it made them read 5x
    slow on two cores (a 1x answer read 6x measured). Building waits for the window to be idle again."""
    from app.session import State

    step, model = window.step, window.model
    wanted = window.model.auto.gamma_max if window.model.auto is not None else window.controls.params().gamma
    qtbot.waitUntil(lambda: len(step.positions) >= wanted, timeout=20_000)
    assert model.begin(State.GENERATING)
    try:
        step.prepare(wanted + 2)
        qtbot.wait(200)  # event-loop turns in which an idle window would build both
        assert len(step.positions) == wanted
    finally:
        model.end(State.GENERATING)
    qtbot.waitUntil(lambda: len(step.positions) == wanted + 2, timeout=20_000)
