"""Render the main window offscreen after a short chat: docs screenshots and `speclens screenshot`."""

from __future__ import annotations

import time
from pathlib import Path

from . import window_settings
from .qapplication import application

LOAD_TIMEOUT_S = 300
ANSWER_TIMEOUT_S = 900  # a busy CPU can be slow; a screenshot waits rather than fails


def wait_until(condition, timeout: float) -> bool:
    """Process events until condition() holds or timeout seconds pass."""
    app = application()
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        app.processEvents()
        time.sleep(0.005)
    return True


def take(path: Path, prompts: list[str], target: str | None, draft: str | None, theme: str,
         size: tuple[int, int] = (1600, 1000), gamma: int | None = None, max_new_tokens: int = 96,
         step: int | None = None, seed: int | None = None, temperature: float | None = None,
         presentation: bool = False, race: str | None = None, replay: Path | None = None,
         say=None) -> str | None:
    """Chat through `prompts` (or play the recording `replay`, or race `race` on the first prompt),
    then save the window to path. Returns an error line, or None.

    step: show the step-through at that round (1-based; 0 = the first round with a rejection).
    The step-through, the race and presentation mode exist to show speculation: where auto chose
    target-only they run auto's fastest measured drafter ("Show speculation anyway"), and say(line)
    tells what ran and at what measured cost."""
    application()
    from .main_window import MainWindow

    window = MainWindow(target_spec=target, draft_spec=draft, autoload=replay is None)
    try:
        window.set_theme(theme)
        window.resize(*size)
        window_settings.default_docks(window)  # as a first run at this size lays them out
        window.show()
        if gamma is not None:
            window.controls.gamma.setValue(gamma)
        window.controls.max_new.setValue(max_new_tokens)
        if seed is not None:
            window.controls.seed_on.setChecked(True)
            window.controls.seed.setValue(seed)
        if temperature is not None:
            window.controls.temperature.setValue(temperature)
        window.controls.show_rejected.setChecked(True)
        if replay is not None:
            if not window.recordings.play_file(replay):
                return window.status.banner.text()
            window.recordings.finish_replay()
        else:
            if not wait_until(lambda: window.model.target is not None or window.status.banner.isVisible(), LOAD_TIMEOUT_S):
                return "the models did not load in time"
            if window.model.target is None:
                return window.status.banner.text()
            if (step is not None or race or presentation) and window.offer.offer() is not None:
                error = _speculate_anyway(window, say)
                if error:
                    return error
            if race:
                error = _race(window, prompts[0], race)
                if error:
                    return error
            else:
                for prompt in prompts:
                    window.input.setPlainText(prompt)
                    window.chat_flow.send()
                    if not wait_until(lambda: not window.model.generating, ANSWER_TIMEOUT_S):
                        return "the answer did not finish in time"
        if not wait_until(lambda: not window.model.generating, ANSWER_TIMEOUT_S):
            return "the replay did not finish in time"
        _inspect_a_token(window)
        if presentation:
            window.presentation.set(True, full_screen=False)
            window.resize(*size)
        window.plots.refresh()
        if step is not None:
            error = _show_step(window, step)
            if error:
                return error
        wait_until(lambda: False, 0.3)  # let layouts settle
        if presentation:
            window.presentation.readout.refresh()
        race_view = window.race.view
        if race_view.isVisible():
            race_view.finish()
            wait_until(lambda: False, 0.3)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(path)):
            return f"could not write {path}"
        return None
    finally:
        window.close()


def _speculate_anyway(window, say) -> str | None:
    _, label, speedup = window.offer.offer()
    window.offer.run()
    if not wait_until(lambda: not window.model.loading, LOAD_TIMEOUT_S):
        return "the draft did not load in time"
    if window.model.drafter is None:
        return window.status.banner.text() or "the draft did not load"
    if say is not None:
        say(f"auto runs target-only on this machine; showing speculation with {label} anyway "
            f"({speedup:.2f}× target-only on this machine)")
    return None


def _race(window, prompt: str, mode: str) -> str | None:
    window.race.start(prompt, mode)
    if not wait_until(lambda: not window.model.racing, ANSWER_TIMEOUT_S * 2):
        return "the race did not finish in time"
    return window.race.error


def _inspect_a_token(window) -> None:
    """Fill the inspector: the first corrected token (it has top entries), else the first drafted one."""
    tokens = [(m, i, t) for m, msg in enumerate(window.conversation.messages) for i, t in enumerate(msg.tokens)]
    for wanted in ("corrected", "accepted"):
        for m, i, token in tokens:
            if token.status == wanted:
                window.chat.token_clicked.emit(m, i)
                return


def _show_step(window, step: int) -> str | None:
    """Raise the step-through at round `step` of the last answer, which must contain a rejection."""
    rounds = window.step.rounds
    rejected = [i for i, r in enumerate(rounds) if r.accepted < r.drafted]
    if not rejected:
        return "no round of the answer had a rejection; try another --prompt, --seed or --temperature"
    index = rejected[0] if step == 0 else step - 1
    if not 0 <= index < len(rounds):
        return f"--step {step}: the answer has {len(rounds)} rounds"
    window.show_step_through()
    window.step.show_round(index)
    return None


def take_lab(path: Path, theme: str, size: tuple[int, int] = (1300, 800), rounds: int = 20_000,
             tab: str = "chain") -> str | None:
    """The lab after `rounds` simulated rounds of its example (no model needed): the paper's chain, or
    (tab "tree") the token tree's three candidates at one node."""
    app = application()
    from . import theme as themes
    from .lab import LabWindow

    lab = LabWindow(themes.apply(app, theme))
    try:
        lab.resize(*size)
        lab.show()
        if tab == "tree":
            lab.tabs.setCurrentWidget(lab.tree_lab)
            lab.tree_lab.example()
            lab.tree_lab.simulate(rounds)
        else:
            lab.chain.paper_example()
            lab.chain.simulate(rounds)
        wait_until(lambda: False, 0.3)
        path.parent.mkdir(parents=True, exist_ok=True)
        return None if lab.grab().save(str(path)) else f"could not write {path}"
    finally:
        lab.close()
