"""Render the main window offscreen after a short chat: docs screenshots and `speclens screenshot`."""

from __future__ import annotations

import time
from pathlib import Path

from .app import application

LOAD_TIMEOUT_S = 300
ANSWER_TIMEOUT_S = 300


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
         size: tuple[int, int] = (1600, 1000), gamma: int | None = None, max_new_tokens: int = 96) -> str | None:
    """Chat through `prompts`, then save the window to path. Returns an error line, or None."""
    application()
    from .main_window import MainWindow

    window = MainWindow(target_spec=target, draft_spec=draft)
    try:
        window.set_theme(theme)
        window.resize(*size)
        window.show()
        if gamma is not None:
            window.controls.gamma.setValue(gamma)
        window.controls.max_new.setValue(max_new_tokens)
        window.controls.show_rejected.setChecked(True)
        if not wait_until(lambda: window.target is not None or window.banner.isVisible(), LOAD_TIMEOUT_S):
            return "the models did not load in time"
        if window.target is None:
            return window.banner.text()
        for prompt in prompts:
            window.input.setPlainText(prompt)
            window.send()
            if not wait_until(lambda: not window.generating, ANSWER_TIMEOUT_S):
                return "the answer did not finish in time"
        _inspect_a_token(window)
        window.plots.refresh()
        wait_until(lambda: False, 0.3)  # let layouts settle
        path.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(path)):
            return f"could not write {path}"
        return None
    finally:
        window.close()


def _inspect_a_token(window) -> None:
    """Fill the inspector: the first corrected token (it has top entries), else the first drafted one."""
    tokens = [(m, i, t) for m, msg in enumerate(window.chat.messages) for i, t in enumerate(msg.tokens)]
    for wanted in ("corrected", "accepted"):
        for m, i, token in tokens:
            if token.status == wanted:
                window.chat.token_clicked.emit(m, i)
                return
