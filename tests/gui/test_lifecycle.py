"""What happens across processes: history surviving a restart, and quitting while the engine works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from gui_helpers import send, start_long_answer

import app.gui.main_window as main_window
from app.history import HistoryStore

ROOT = Path(__file__).resolve().parents[2]


def run_script(script: str, data_dir: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, SPECLENS_DATA_DIR=str(data_dir), QT_QPA_PLATFORM="offscreen", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


REOPEN = """
    import json
    from app.gui.qapplication import application
    app = application()
    from app.gui.main_window import MainWindow
    from app.history import HistoryStore
    window = MainWindow(autoload=False)
    window.history.open_conversation(HistoryStore().list_conversations()[0].id)
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
    from app.gui.qapplication import application
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
            print("closing while", "generating" if window.model.generating else "loading", flush=True)
            start = time.perf_counter()
            window.close()
            print(f"closed in {time.perf_counter() - start:.2f} s", flush=True)
            app.quit()
        elif window.model.target is not None and not window.model.generating:
            window.input.setPlainText("a long answer please")
            window.chat_flow.send()

    from PySide6.QtCore import QTimer
    from app.gui.app import leave
    timer = QTimer(interval=20, timeout=close_soon)
    timer.start()
    leave(app.exec())  # as the app exits: an abandoned load stage is never torn down under its thread
"""


@pytest.mark.parametrize("phase", ["generating", "loading"])
def test_closing_mid_work_exits_cleanly(data_dir, tiny_pair_dirs, phase):
    target, draft = tiny_pair_dirs
    result = run_script(QUIT, data_dir, str(target), str(draft), phase)
    assert result.returncode == 0, result.stderr
    assert f"closing while {phase}" in result.stdout
    assert "QThread" not in result.stderr and "Traceback" not in result.stderr
    with HistoryStore(data_dir / "history.sqlite3") as store:
        chats = store.list_conversations()
        messages = store.messages(chats[0].id) if chats else []
    if phase == "generating":  # the answer so far is kept, marked partial
        assert [(m.role, m.partial) for m in messages] == [("user", False), ("assistant", True)]
        assert messages[1].content and messages[1].tokens
    else:
        assert messages == []


def stored(window):
    with HistoryStore() as store:
        return store.messages(window.conversation.conv_id)


def test_closing_mid_answer_saves_it_as_partial_then_closes_the_history(qtbot, window, monkeypatch):
    rec = start_long_answer(window, monkeypatch, "keep going", max_new=400)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 3, timeout=30_000)
    window.close()
    assert not window.engine_thread.isRunning()
    assert rec.finished[-1].reason == "cancelled"  # stopped by the engine at a round boundary
    last = stored(window)[-1]
    assert last.role == "assistant" and last.partial
    shown = window.conversation.messages[-1]
    assert last.content == shown.text and last.tokens == tuple(shown.tokens)
    assert len([t for t in last.tokens if t.status != "rejected"]) == rec.finished[-1].new_tokens
    with pytest.raises(Exception, match="closed database"):
        window.store.messages(window.conversation.conv_id)  # closed, after that last write


def test_a_round_longer_than_the_close_wait_is_abandoned_and_what_was_shown_is_saved(qtbot, window, monkeypatch):
    monkeypatch.setattr(main_window, "CLOSE_WAIT_MS", 50)
    rec = start_long_answer(window, monkeypatch, "slow rounds", max_new=400)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 2, timeout=30_000)
    monkeypatch.setattr(window.model.target.model, "forward", slow_forward(window.model.target.model.forward, 1.0))
    qtbot.wait(200)  # the next round is now inside its slow forward pass
    thread = window.engine_thread
    window.close()
    assert thread in main_window.ABANDONED and thread.isRunning()
    last = stored(window)[-1]
    assert last.role == "assistant" and last.partial and last.content == window.conversation.messages[-1].text
    qtbot.waitUntil(lambda: not thread.isRunning(), timeout=30_000)  # it ends on its own, at the round's end
    assert stored(window)[-1] == last  # and nothing reached the closed window afterwards


def slow_forward(forward, seconds: float):
    def slow(*args, **kwargs):
        time.sleep(seconds)
        return forward(*args, **kwargs)

    return slow


TORCH_FREE = """
    import sys
    from app.gui.qapplication import application
    app = application()
    from app.gui.main_window import MainWindow
    from app.recording import read
    window = MainWindow(target_spec=sys.argv[1], draft_spec="self", autoload=False)
    window.show()
    app.processEvents()
    shown = sorted(m for m in ("torch", "transformers") if m in sys.modules)
    window.controls.show_rejected.setChecked(True)
    assert window.recordings.play_file(__import__("pathlib").Path(sys.argv[2]))
    window.recordings.player.set_speed(4.0)
    while window.model.generating:
        app.processEvents()
    played = sorted(m for m in ("torch", "transformers") if m in sys.modules)
    print("shown with", shown, "replayed with", played, "tokens", len(window.conversation.messages[-1].tokens), flush=True)
    window.close()
"""


def test_the_window_and_a_replay_need_neither_torch_nor_transformers(data_dir, tmp_path):
    """Start-up shows the window before the seconds of importing torch and transformers (the loader imports
    them in the engine thread), and a recorded demo plays without them at all."""
    from recording.test_format import sample_recording  # tests/ is on sys.path (tests/conftest.py)

    from app.recording import write

    recording = tmp_path / "demo.speclens"
    write(recording, sample_recording())
    result = run_script(TORCH_FREE, data_dir, str(tmp_path / "no-model-here"), str(recording))
    assert result.returncode == 0, result.stderr
    assert "shown with [] replayed with [] tokens" in result.stdout, result.stdout
    assert "tokens 0" not in result.stdout
