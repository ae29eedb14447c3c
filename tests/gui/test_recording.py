"""Recordings: record an answer, replay it where no model can load, and get back the same token statuses,
statistics and plot data; playback speed and stepping; bad files. The recording flow with its
collaborators (the chat flow's, with or without a pair); `speclens replay` and the history in a window."""

from __future__ import annotations

import pytest
from flow_rigs import ChatRig
from gui_helpers import send

from app.recording import read


def plot_data(win) -> dict:
    win.plots.refresh()
    p = win.plots
    return {
        "hist": list(p.hist_message.opts["height"]),
        "bonus": list(p.hist_bonus.opts["height"]),
        "speedup": [list(a) for a in p.speedup_measured.getData()],
        "predicted": [list(a) for a in p.speedup_predicted.getData()],
        "position": list(p.pos_message.opts["height"]),
        "tps": [list(a) for a in p.tps_curve.getData()],
    }


@pytest.fixture
def replay_window(qtbot, data_dir, monkeypatch):
    """A window that cannot load any model: replays must not need one."""
    from app.gui.main_window import MainWindow

    monkeypatch.setenv("SPECLENS_DEFAULT_GGUF", str(data_dir / "nowhere.gguf"))
    win = MainWindow(target_spec="default", draft_spec="self", autoload=False)
    qtbot.addWidget(win)
    win.show()
    return win


@pytest.fixture
def replay_rig(qtbot, data_dir, monkeypatch):
    """The recording flow's collaborators with no pair loaded: replays must not need one."""
    monkeypatch.setenv("SPECLENS_DEFAULT_GGUF", str(data_dir / "nowhere.gguf"))
    rig = ChatRig()
    yield rig
    rig.close()


@pytest.fixture
def recorded(qtbot, chat_rig, tmp_path):
    chat_rig.controls.show_rejected.setChecked(True)
    chat_rig.controls.max_new.setValue(40)
    send(qtbot, chat_rig, "record me")
    path = tmp_path / "answer.speclens"
    chat_rig.recordings.save_to(path)
    return chat_rig, path


def test_replay_shows_the_same_statuses_statistics_and_plots(qtbot, recorded, replay_rig):
    live, path = recorded
    rec = read(path)
    assert rec.warning is None and len(rec.runs[0].steps) == len(live.recorder.rounds)
    assert rec.runs[0].info["target"]["fingerprint"] and rec.header["machine"]["cpus"]
    replay_rig.controls.show_rejected.setChecked(True)
    assert replay_rig.recordings.play_file(path)
    replay_rig.recordings.player.set_speed(4.0)
    qtbot.waitUntil(lambda: not replay_rig.model.generating, timeout=30_000)
    assert replay_rig.model.target is None  # nothing was loaded
    assert replay_rig.chat.statuses_shown(1) == live.chat.statuses_shown(1)
    live_stats = {k: v for k, v in live.conversation.messages[1].stats.items() if k != "recording"}
    assert replay_rig.conversation.messages[1].stats == live_stats
    assert plot_data(replay_rig) == plot_data(live)
    # the inspector shows the same token details
    corrected = next(i for i, t in enumerate(live.conversation.messages[1].tokens) if t.status == "corrected")
    live.chat.token_clicked.emit(1, corrected)
    replay_rig.chat.token_clicked.emit(1, corrected)
    assert replay_rig.details.toPlainText() == live.details.toPlainText()


def test_every_answer_is_recorded_into_history(qtbot, recorded):
    live, _ = recorded
    name = live.conversation.messages[1].stats["recording"]
    from app.gui.recording_flow import recordings_dir
    from app.history import HistoryStore

    assert (recordings_dir() / name).is_file()
    assert HistoryStore().messages(live.conversation.conv_id)[-1].stats["recording"] == name
    live.chat.action.emit("replay", 1)  # the footer's Replay link
    assert live.recordings.player is not None
    live.recordings.player.finish()
    qtbot.waitUntil(lambda: not live.model.generating, timeout=10_000)
    assert [s for _, s in live.chat.statuses_shown(1)]


def test_stepping_and_speed(qtbot, recorded, replay_rig):
    _, path = recorded
    win = replay_rig
    win.recordings.play_file(path)
    player = win.recordings.player
    player.pause()
    win.playback.step()
    win.answers.flush()
    first_round = read(path).runs[0].steps[0]
    assert player.rounds_played == 1 and not player.playing
    assert len(win.conversation.messages[1].tokens) == len(first_round.events) - 1  # tokens, not the RoundEvent
    assert win.stats.message.rounds == [first_round.round]
    win.playback.step()
    assert player.rounds_played == 2
    assert "round 2 of" in win.playback.progress.text()
    # the next wait is the recorded gap divided by the speed
    gap = player.items[player.next][0] - player.now()
    player.set_speed(4.0)
    player.play()
    assert player.timer.interval() == int(gap / 4 * 1000)
    player.pause()
    gap = player.items[player.next][0] - player.now()
    player.set_speed(0.5)
    player.play()
    assert player.timer.interval() == int(gap * 2 * 1000)
    win.chat_flow.stop()  # Stop ends the replayed answer where it is, as it does live
    assert not win.model.generating and win.conversation.messages[1].partial


def test_bad_recordings_get_clear_messages(qtbot, replay_rig, tmp_path):
    bad = tmp_path / "bad.speclens"
    bad.write_bytes(b"not a recording")
    assert not replay_rig.recordings.play_file(bad)
    assert "bad.speclens is not a SpecLens recording" in replay_rig.status.banner.text()


def test_a_truncated_recording_plays_to_where_it_ends(qtbot, recorded, replay_rig):
    _, path = recorded
    data = path.read_bytes()
    cut = path.with_name("cut.speclens")
    cut.write_bytes(data[: len(data) // 2])
    rounds = len(read(cut).runs[0].steps)
    assert replay_rig.recordings.play_file(cut)
    assert "ends early" in replay_rig.status.banner.text()
    replay_rig.recordings.player.finish()
    qtbot.waitUntil(lambda: not replay_rig.model.generating, timeout=10_000)
    message = replay_rig.conversation.messages[1]
    assert message.partial and len(message.stats["rounds"]) == rounds


def test_speclens_replay_starts_playing_in_presentation_mode(qtbot, recorded, replay_window):
    _, path = recorded
    replay_window.start_replay(read(path), path.name, presentation=True, speed=2.0)  # what `speclens replay` calls
    assert replay_window.presentation.on and replay_window.recordings.player.speed == 2.0 and replay_window.recordings.player.playing
    replay_window.recordings.player.finish()
    qtbot.waitUntil(lambda: not replay_window.model.generating, timeout=10_000)
    replay_window.presentation.set(False)


def test_recordings_leave_with_their_answers(qtbot, window, data_dir, monkeypatch):
    """A regenerated answer and a deleted chat take their recording files with them; others stay."""
    from PySide6.QtWidgets import QMessageBox

    from app.gui.recording_flow import recordings_dir

    window.controls.max_new.setValue(6)
    send(qtbot, window, "first chat")
    kept = window.conversation.messages[-1].stats["recording"]
    window.history.new_chat()
    send(qtbot, window, "second chat")
    first = window.conversation.messages[-1].stats["recording"]
    assert (recordings_dir() / first).is_file()
    window.chat_flow.regenerate()
    qtbot.waitUntil(lambda: not window.model.generating, timeout=60_000)
    second = window.conversation.messages[-1].stats["recording"]
    assert second != first and not (recordings_dir() / first).exists() and (recordings_dir() / second).is_file()
    monkeypatch.setattr("app.gui.conversations.QMessageBox.question",
                        lambda *a, **k: QMessageBox.StandardButton.Yes)
    window.conversations.delete(window.conversation.conv_id)
    assert not (recordings_dir() / second).exists()
    assert sorted(p.name for p in recordings_dir().iterdir()) == [kept]  # the other chat's file stays


LIVE_SCRIPT = [1, 3, 2, 5, 1, 4, 2, 2, 3]


def test_a_recording_keeps_live_gamma_round_by_round_and_a_replay_plays_it(qtbot, replay_rig, tiny_pair_dirs,
                                                                            tmp_path):
    """`record` runs its answer as the app does, γ from the live controller before every round (it once kept
    the γ chosen at load for the whole answer: the planted twin); the file keeps each round's γ, and a replay
    shows every round at the γ it was recorded with."""
    from scripted_gamma import ScriptedGamma

    from app.engine import DecodeParams
    from app.engine.drafters import PromptLookupDrafter
    from app.models import load_model
    from app.recording import Recording, write
    from app.recording.builder import header
    from app.recording.headless import record_run
    from app.session.answer_loop import AnswerLoop

    target = load_model(str(tiny_pair_dirs[0]), device="cpu")
    turns = [{"role": "user", "content": "abcabcabcabc"}]
    params = DecodeParams(temperature=0.0, max_new_tokens=40)

    def recorded(live: bool) -> list[int]:
        script = ScriptedGamma(LIVE_SCRIPT)
        answer = AnswerLoop(target=target, drafter=PromptLookupDrafter(), controller=script, gamma_auto=live,
                            params=params if live else DecodeParams(gamma=script.gamma(), temperature=0.0,
                                                                    max_new_tokens=40))
        path = tmp_path / f"live-{live}.speclens"
        write(path, Recording(header("answer", "live γ", "cpu"), [record_run(answer, turns, baseline_steps=0)]))
        return [s.round.gamma for s in read(path).runs[0].steps]

    live = recorded(True)
    assert live[: len(LIVE_SCRIPT)] == LIVE_SCRIPT  # greedy on the tiny pair: 17 rounds, none clipped this early
    assert set(recorded(False)[:-1]) == {LIVE_SCRIPT[0]}  # the twin: one γ for the whole answer
    replay_rig.recordings.play(read(tmp_path / "live-True.speclens"))
    replay_rig.recordings.finish_replay()
    qtbot.waitUntil(lambda: replay_rig.model.idle, timeout=10_000)
    assert [r.gamma for r in replay_rig.stats.message.rounds] == live
    assert [r.gamma for r in replay_rig.step.rounds] == live
