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


class RecordingFlowMixin:
    def _init_recordings(self) -> None:
        self.run_builder: RunBuilder | None = None
        self.last_recording: Recording | None = None
        self.player: Player | None = None
        self.replay_params = None
        self.playback = PlaybackBar()
        self.playback.closed.connect(self.close_replay)
        layout = self.centralWidget().layout()
        layout.insertWidget(layout.indexOf(self.legend) + 1, self.playback)

    # --- recording live answers ---------------------------------------------------------------
    def _record_begin(self, turns: list[dict], params) -> None:
        self.run_builder = RunBuilder({
            "label": QCoreApplication.translate("Recordings", "speculative") if self.model.drafter is not None else QCoreApplication.translate("Recordings", "target only"),
            "prompt": turns,
            "target": model_info(self.model.target),
            "draft": drafter_info(self.model.drafter),
            "params": asdict(params),
            "device": str(self.model.target.device),
        })

    def _answer_params(self):
        """What the answer streaming was decoded with: the replayed recording's, else the controls'
        (a served answer passes its request's to finish_answer)."""
        return self.replay_params if self.player is not None else self.controls.params()

    def _record_end(self, message) -> None:
        """Called by _end_answer before the message is stored: its stats name the recording file."""
        builder, self.run_builder = self.run_builder, None
        if builder is None:
            return
        builder.run.info["vocab"] = top_vocab(builder.run, self.model.target.tokenizer)
        turns = builder.run.info["prompt"]
        title = next((t["content"] for t in reversed(turns) if t["role"] == "user"), "")[:60]
        self.last_recording = Recording(header("answer", title, builder.run.info["device"]), [builder.run])
        if self.conv_id is None:
            return
        path = recordings_dir() / f"{self.conv_id}-{int(time.time() * 1000)}{SUFFIX}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path, self.last_recording)
            message.stats["recording"] = path.name
        except OSError as exc:
            self.show_banner(QCoreApplication.translate("Recordings", "The recording was not saved: {0}").format(exc))

    def save_recording(self) -> None:
        if self._recording_source() is None:
            self.statusBar().showMessage(QCoreApplication.translate("Recordings", "No answer to save yet"), 3000)
            return
        path, _ = QFileDialog.getSaveFileName(self, QCoreApplication.translate("Recordings", "Save recording"), f"answer{SUFFIX}",
                                              QCoreApplication.translate("Recordings", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            self.save_recording_to(Path(path))

    def save_recording_to(self, path: Path) -> None:
        source = self._recording_source()
        if isinstance(source, Path):
            shutil.copyfile(source, path)
        else:
            write(path, source)
        self.statusBar().showMessage(QCoreApplication.translate("Recordings", "Recording saved to {0}").format(path), 4000)

    def _recording_source(self) -> Path | Recording | None:
        """The last answer of the open chat as saved in history, else the last recorded answer."""
        for m in reversed(self.chat.messages):
            name = m.stats.get("recording") if m.role == "assistant" else None
            if name and (recordings_dir() / name).is_file():
                return recordings_dir() / name
        return self.last_recording

    # --- replay -------------------------------------------------------------------------------
    def open_recording(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, QCoreApplication.translate("Recordings", "Open recording"), "",
                                              QCoreApplication.translate("Recordings", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            self.play_file(Path(path))

    def play_file(self, path: Path) -> bool:
        try:
            recording = read(path)
        except RecordingError as exc:
            self.show_banner(str(exc))
            return False
        return self.play_recording(recording, path.name)

    def replay_message(self, index: int) -> None:
        name = self.chat.messages[index].stats.get("recording")
        if name:
            self.play_file(recordings_dir() / name)

    def play_recording(self, recording: Recording, title: str = "") -> bool:
        if not self.model.idle:  # a replay streams through the chat flow, as an answer does
            return False
        if recording.kind == "race":
            self.race.show(recording)
            return True
        run = recording.runs[0]
        self.close_replay()
        self.new_chat()
        turns = run.info.get("prompt") or []
        self.system_prompt.setText(next((t["content"] for t in turns if t["role"] == "system"), ""))
        for t in turns:
            if t["role"] != "system":
                self.chat.add_message(ChatMessage(t["role"], t["content"]))
        draft = run.info.get("draft") or {}
        target = run.info.get("target") or {}
        stats = {"target": target_header(target.get("name", "?"), target.get("kernels")),
                 "draft": draft.get("name", QCoreApplication.translate("Recordings", "none (target only)"))}
        self.answer_index = self.chat.add_message(ChatMessage("assistant", stats=stats, streaming=True))
        self.stats.new_message()
        vocab = run.info.get("vocab") or {}
        self.details.decode = lambda token_id: vocab.get(str(token_id), f"#{token_id}")
        self.replay_params = SimpleNamespace(**{**DEFAULT_PARAMS, **(run.info.get("params") or {})})
        self.cancel = threading.Event()
        self.player = Player(run, parent=self)
        self.player.baseline.connect(self._on_baseline)
        self.player.events.connect(self._on_events)
        self.player.finished.connect(self._on_finished)
        self.player.ended_early.connect(self._replay_cut)
        self.model.begin(State.GENERATING)
        self._sync_buttons()
        self.flush_timer.start()
        self.playback.attach(self.player, QCoreApplication.translate("Recordings", "Replay: {0}").format(title or recording.header.get("title", "")))
        if recording.warning:
            self.show_banner(recording.warning, info=True)
        else:
            self.hide_banner()
        self.progress_label.setText(QCoreApplication.translate("Recordings", "Replaying a recording"))
        self.player.play()
        return True

    def start_replay(self, recording: Recording, title: str, presentation: bool, speed: float) -> None:
        """`speclens replay`: the window opened without models; play at once."""
        if presentation:
            self.presentation.set(True)
        self.playback.speed.setCurrentIndex(self.playback.speed.findData(speed))
        self.play_recording(recording, title)

    def _replay_cut(self) -> None:
        self._flush()
        self._end_answer(partial=True, fin=None)
        self.progress_label.setText(QCoreApplication.translate("Recordings", "Done · the recording ends here"))

    def _stop_replay(self) -> None:
        """Stop during a replay: the answer ends where the playback is, as Stop does live."""
        player = self.player
        player.pause()
        player.next = len(player.items)
        self._replay_cut()

    def close_replay(self) -> None:
        if self.player is None:
            return
        if self.model.generating:
            self._stop_replay()
        self.player.timer.stop()
        self.player.deleteLater()
        self.player = None
        self.replay_params = None
        self.playback.setVisible(False)


def target_header(name: str, kernels: str | None) -> str:
    """The target as an answer's header names it: with the kernels it ran on ("… (bf16 · oneDNN packed)")."""
    return f"{name} ({kernels})" if kernels else name
