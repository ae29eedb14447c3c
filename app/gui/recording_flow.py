"""Recordings in the window: every answer is recorded as it streams and saved next to the history
database; File → Save recording writes one anywhere; a recording (or a saved answer) replays
through the same slots the worker's signals drive, paced by a Player."""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QFileDialog

from app.paths import user_data_dir
from app.recording import SUFFIX, Recording, RecordingError, RunBuilder, read, write
from app.recording.builder import drafter_info, header, model_info, top_vocab
from app.session import State

from .chat_view import ChatMessage
from .playback_bar import PlaybackBar
from .player import Player

DEFAULT_PARAMS = {"gamma": 4, "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": None, "max_new_tokens": 0}


def recordings_dir() -> Path:
    return user_data_dir() / "recordings"


def remove_recordings(names: list[str]) -> None:
    """Delete the recordings of answers that left the history (a deleted chat, a regenerated answer).
    Only plain file names inside the recordings folder: a name in a stored message is never a path."""
    for name in names:
        if name and Path(name).name == name:
            (recordings_dir() / name).unlink(missing_ok=True)


class RecordingFlow:
    """Composed into the window, not a mixin: handed the chat model (the pair an answer is recorded with,
    whether the engine is idle for a replay) and the window whose chat flow a replay drives, through the
    same slots the worker's signals reach (a replay is shown exactly as a live answer)."""

    def __init__(self, window, model) -> None:
        self.window, self.model = window, model
        w = window
        self.builder: RunBuilder | None = None
        self.last: Recording | None = None
        self.player: Player | None = None
        self.replay_params = None
        self.playback = PlaybackBar()
        self.playback.closed.connect(self.close)
        layout = w.centralWidget().layout()
        layout.insertWidget(layout.indexOf(w.legend) + 1, self.playback)

    # --- recording live answers ---------------------------------------------------------------
    def begin(self, turns: list[dict], params) -> None:
        """A live answer starts: its run is recorded as it streams."""
        self.builder = RunBuilder({
            "label": QCoreApplication.translate("Recordings", "speculative") if self.model.drafter is not None else QCoreApplication.translate("Recordings", "target only"),
            "prompt": turns,
            "target": model_info(self.model.target),
            "draft": drafter_info(self.model.drafter),
            "params": asdict(params),
            "device": str(self.model.target.device),
        })

    def events(self, batch: list) -> None:
        if self.builder is not None:
            self.builder.events(batch)

    def baseline(self, seconds: float) -> None:
        if self.builder is not None:
            self.builder.baseline(seconds)

    def finished(self, fin) -> None:
        if self.builder is not None:
            self.builder.finished(fin)

    def answer_params(self):
        """What the answer streaming was decoded with: the replayed recording's, else the controls'
        (a served answer passes its request's to finish_answer)."""
        w = self.window
        return self.replay_params if self.player is not None else w.controls.params()

    def end(self, message) -> None:
        """Called by the chat flow's _end_answer before the message is stored: its stats name the recording file."""
        w = self.window
        builder, self.builder = self.builder, None
        if builder is None:
            return
        builder.run.info["vocab"] = top_vocab(builder.run, self.model.target.tokenizer)
        turns = builder.run.info["prompt"]
        title = next((t["content"] for t in reversed(turns) if t["role"] == "user"), "")[:60]
        self.last = Recording(header("answer", title, builder.run.info["device"]), [builder.run])
        if w.chat_flow.conv_id is None:
            return
        path = recordings_dir() / f"{w.chat_flow.conv_id}-{int(time.time() * 1000)}{SUFFIX}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path, self.last)
            message.stats["recording"] = path.name
        except OSError as exc:
            w.show_banner(QCoreApplication.translate("Recordings", "The recording was not saved: {0}").format(exc))

    def save(self) -> None:
        w = self.window
        if self._source() is None:
            w.statusBar().showMessage(QCoreApplication.translate("Recordings", "No answer to save yet"), 3000)
            return
        path, _ = QFileDialog.getSaveFileName(w, QCoreApplication.translate("Recordings", "Save recording"), f"answer{SUFFIX}",
                                              QCoreApplication.translate("Recordings", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            self.save_to(Path(path))

    def save_to(self, path: Path) -> None:
        w = self.window
        source = self._source()
        if isinstance(source, Path):
            shutil.copyfile(source, path)
        else:
            write(path, source)
        w.statusBar().showMessage(QCoreApplication.translate("Recordings", "Recording saved to {0}").format(path), 4000)

    def _source(self) -> Path | Recording | None:
        """The last answer of the open chat as saved in history, else the last recorded answer."""
        w = self.window
        for m in reversed(w.chat.messages):
            name = m.stats.get("recording") if m.role == "assistant" else None
            if name and (recordings_dir() / name).is_file():
                return recordings_dir() / name
        return self.last

    # --- replay -------------------------------------------------------------------------------
    def open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.window, QCoreApplication.translate("Recordings", "Open recording"), "",
                                              QCoreApplication.translate("Recordings", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            self.play_file(Path(path))

    def play_file(self, path: Path) -> bool:
        w = self.window
        try:
            recording = read(path)
        except RecordingError as exc:
            w.show_banner(str(exc))
            return False
        return self.play(recording, path.name)

    def replay(self, index: int) -> None:
        w = self.window
        name = w.chat.messages[index].stats.get("recording")
        if name:
            self.play_file(recordings_dir() / name)

    def play(self, recording: Recording, title: str = "") -> bool:
        w = self.window
        if not self.model.idle:  # a replay streams through the chat flow, as an answer does
            return False
        if recording.kind == "race":
            w.race.show(recording)
            return True
        run = recording.runs[0]
        self.close()
        w.history.new_chat()
        turns = run.info.get("prompt") or []
        w.system_prompt.setText(next((t["content"] for t in turns if t["role"] == "system"), ""))
        for t in turns:
            if t["role"] != "system":
                w.chat.add_message(ChatMessage(t["role"], t["content"]))
        draft = run.info.get("draft") or {}
        target = run.info.get("target") or {}
        stats = {"target": target_header(target.get("name", "?"), target.get("kernels")),
                 "draft": draft.get("name", QCoreApplication.translate("Recordings", "none (target only)"))}
        w.chat_flow.answer_index = w.chat.add_message(ChatMessage("assistant", stats=stats, streaming=True))
        w.stats.new_message()
        vocab = run.info.get("vocab") or {}
        w.details.decode = lambda token_id: vocab.get(str(token_id), f"#{token_id}")
        self.replay_params = SimpleNamespace(**{**DEFAULT_PARAMS, **(run.info.get("params") or {})})
        w.chat_flow.cancel = threading.Event()
        self.player = Player(run, parent=w)
        self.player.baseline.connect(w.chat_flow._on_baseline)
        self.player.events.connect(w.chat_flow._on_events)
        self.player.finished.connect(w.chat_flow._on_finished)
        self.player.ended_early.connect(self._cut)
        self.model.begin(State.GENERATING)
        w._sync_buttons()
        w.chat_flow.flush_timer.start()
        self.playback.attach(self.player, QCoreApplication.translate("Recordings", "Replay: {0}").format(title or recording.header.get("title", "")))
        if recording.warning:
            w.show_banner(recording.warning, info=True)
        else:
            w.hide_banner()
        w.progress_label.setText(QCoreApplication.translate("Recordings", "Replaying a recording"))
        self.player.play()
        return True

    def start_replay(self, recording: Recording, title: str, presentation: bool, speed: float) -> None:
        """`speclens replay`: the window opened without models; play at once."""
        w = self.window
        if presentation:
            w.presentation.set(True)
        self.playback.speed.setCurrentIndex(self.playback.speed.findData(speed))
        self.play(recording, title)

    def _cut(self) -> None:
        w = self.window
        w.chat_flow._flush()
        w.chat_flow._end_answer(partial=True, fin=None)
        w.progress_label.setText(QCoreApplication.translate("Recordings", "Done · the recording ends here"))

    def stop_replay(self) -> None:
        """Stop during a replay: the answer ends where the playback is, as Stop does live."""
        player = self.player
        player.pause()
        player.next = len(player.items)
        self._cut()

    def close(self) -> None:
        if self.player is None:
            return
        if self.model.generating:
            self.stop_replay()
        self.player.timer.stop()
        self.player.deleteLater()
        self.player = None
        self.replay_params = None
        self.playback.setVisible(False)


def target_header(name: str, kernels: str | None) -> str:
    """The target as an answer's header names it: with the kernels it ran on ("… (bf16 · oneDNN packed)")."""
    return f"{name} ({kernels})" if kernels else name
