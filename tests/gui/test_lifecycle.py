"""What happens across processes: history surviving a restart, and quitting while the engine works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from gui_helpers import send

ROOT = Path(__file__).resolve().parents[2]


def run_script(script: str, data_dir: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPECLENS_DATA_DIR=str(data_dir), QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


REOPEN = """
    import json
    from app.gui.app import application
    app = application()
    from app.gui.main_window import MainWindow
    from app.history import HistoryStore
    window = MainWindow(autoload=False)
    window.open_conversation(HistoryStore().list_conversations()[0].id)
    window.plots.refresh()
    print(json.dumps({"shown": window.chat.statuses_shown(1), "histogram": window.plots.histogram_counts(),
                      "system": window.system_prompt.text()}))
    window.close()
"""


def test_a_conversation_survives_a_restart_with_its_colours(qtbot, window, data_dir):
    window.system_prompt.setText("be brief")
    window.controls.max_new.setValue(50)
    send(qtbot, window, "remember me")
    shown = window.chat.statuses_shown(1)
    histogram = window.plots.histogram_counts()
    window.close()
    result = run_script(REOPEN, data_dir)
    assert result.returncode == 0, result.stderr
    reopened = json.loads(result.stdout.strip().splitlines()[-1])
    assert [tuple(x) for x in reopened["shown"]] == shown
    assert reopened["histogram"] == histogram
    assert reopened["system"] == "be brief"


QUIT = """
    import sys, time
    from app.gui.app import application
    app = application()
    from app.gui.main_window import MainWindow
    from app.models import LoadedModel
    LoadedModel.stop_token_ids = property(lambda self: ())  # no EOS: the answer would run long
    target, draft, when = sys.argv[1:]
    window = MainWindow(target_spec=target, draft_spec=draft)
    window.controls.max_new.setValue(4000)
    window.show()

    def close_soon():
        if when == "loading" or window.stats.message.rounds:
            print("closing while", "generating" if window.generating else "loading", flush=True)
            window.close()
            app.quit()
        elif window.target is not None and not window.generating:
            window.input.setPlainText("a long answer please")
            window.send()

    from PySide6.QtCore import QTimer
    timer = QTimer(interval=20, timeout=close_soon)
    timer.start()
    sys.exit(app.exec())
"""


@pytest.mark.parametrize("phase", ["generating", "loading"])
def test_closing_mid_work_exits_cleanly(data_dir, tiny_pair_dirs, phase):
    target, draft = tiny_pair_dirs
    result = run_script(QUIT, data_dir, str(target), str(draft), phase)
    assert result.returncode == 0, result.stderr
    assert f"closing while {phase}" in result.stdout
    assert "QThread" not in result.stderr and "Traceback" not in result.stderr
