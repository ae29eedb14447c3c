"""QApplication setup and the GUI entry point used by `speclens` (no subcommand) and `speclens gui`."""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import NoReturn

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app import startup_trace

from .platform_check import platform_problem
from .qapplication import application


@dataclass
class GuiOptions:
    target: str | None = None  # None: the last used target (first run: "default")
    draft: str | None = None  # None: the last used draft (first run: "self")
    data_dir: str | None = None  # history and settings folder; overrides SPECLENS_DATA_DIR
    replay: object = None  # an app.recording.Recording to play instead of loading models
    replay_name: str = ""
    presentation: bool = False
    speed: float = 1.0


def run(options: GuiOptions) -> int:
    """Returns only to report a start-up problem; otherwise the process ends here (see leave)."""
    if options.data_dir:
        os.environ["SPECLENS_DATA_DIR"] = options.data_dir
    problem = platform_problem()
    if problem:  # Qt would abort with a generic message; name what is missing instead
        print(f"speclens: error: {problem}", file=sys.stderr)
        return 1
    app = application(sys.argv[:1])
    startup_trace.mark("qt")
    # No splash screen: the window paints ~0.35 s after Qt is up, before torch and transformers are imported
    # (app/gui/preload.py), and QSplashScreen.show() alone took 1.0 s (Qt 6.11, offscreen and minimal).
    from .main_window import MainWindow  # after the QApplication exists (pyqtgraph reads it)

    window = MainWindow(target_spec=options.target, draft_spec=options.draft, autoload=options.replay is None)
    window.show()
    # Asked to be the active window: where no window manager activates a new window (a bare X server, some
    # kiosk setups for talks), typed keys reached the input but its shortcuts (Ctrl+Enter sends) did not fire.
    window.activateWindow()
    if startup_trace.enabled():
        _trace_startup(app, window)
    if options.replay is not None:
        window.start_replay(options.replay, options.replay_name, options.presentation, options.speed)
    elif options.presentation:
        window.presentation.set(True)
    code = app.exec()
    window.close()  # a quit that bypassed the window (session end) still saves and closes the history
    leave(code)


def _trace_startup(app: QApplication, window) -> None:
    """SPECLENS_STARTUP_TRACE=1: mark the window painted and ready (models loaded, Send enabled; for
    `speclens replay`, the recording playing), then quit. The loader marks the stages in between."""
    app.processEvents()  # the window's first paint
    startup_trace.mark("window")

    def check() -> None:
        if (window.send_button.isEnabled() and not window.model.loading) or window.recordings.replaying():
            startup_trace.mark("ready")
        elif window.status.banner.isVisible():
            print(f"startup: failed {window.status.banner.text()}", flush=True)
        else:
            return
        app.quit()

    poll = QTimer(window, interval=10, timeout=check)  # in this thread, where the window's state lives
    poll.start()


def leave(code: int) -> NoReturn:
    """Exit without the interpreter's teardown. Everything is saved and closed by now; tearing down torch
    and transformers only adds seconds (4.6 s measured on a busy 2-core machine), and an engine thread may
    still be finishing an abandoned round or load stage, which atexit's Qt clean-up must not destroy."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
