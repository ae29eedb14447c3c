"""Recordings in the window: File ▸ Save recording writes the last answer's (or race's) recording anywhere,
File ▸ Open recording and an answer's Replay link play one. A replayed answer streams through the answer
flow as a live one does, its events paced by a Player; a race recording replays in the race view."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QFileDialog

from app.recording import SUFFIX, Recording, RecordingError, read, write
from app.session.conversation import REPLAY, AnswerSource, Message

from .answer_header import target_header
from .answer_recorder import recordings_dir
from .player import Player

DEFAULT_PARAMS = {"gamma": 4, "temperature": 0.0, "top_k": 0, "top_p": 1.0, "seed": None, "max_new_tokens": 0}



class RecordingFlow:
    """Handed the conversation a replay shows in (a new chat), the chat model (a replay needs the engine idle,
    and holds it GENERATING while it plays), the answer flow it streams through, the recorder (what Save
    saves), the status sink, the playback bar, the token inspector (a replay decodes from the recorded
    vocabulary), the race flow (a race recording replays there), and the widget its dialogs open over."""

    def __init__(self, conversation, model, answers, recorder, status, playback, details, race, parent) -> None:
        self.conversation, self.model, self.answers, self.recorder = conversation, model, answers, recorder
        self.status, self.playback, self.details, self.race, self.parent = status, playback, details, race, parent
        self.player: Player | None = None
        self.playback.closed.connect(self.close)
        conversation.opened.connect(self.close)  # another chat: the replay's bar goes

    # --- saving --------------------------------------------------------------------------------
    def save(self) -> None:
        if self.recorder.latest(self.conversation.messages) is None:
            self.status.flash(QCoreApplication.translate("Recordings", "No answer to save yet"), 3000)
            return
        path, _ = QFileDialog.getSaveFileName(self.parent, QCoreApplication.translate("Recordings", "Save recording"), f"answer{SUFFIX}",
                                              QCoreApplication.translate("Recordings", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            self.save_to(Path(path))

    def save_to(self, path: Path) -> None:
        source = self.recorder.latest(self.conversation.messages)
        if isinstance(source, Path):
            shutil.copyfile(source, path)
        else:
            write(path, source)
        self.status.flash(QCoreApplication.translate("Recordings", "Recording saved to {0}").format(path), 4000)

    # --- replay -------------------------------------------------------------------------------
    def open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self.parent, QCoreApplication.translate("Recordings", "Open recording"), "",
                                              QCoreApplication.translate("Recordings", "SpecLens recordings (*{0})").format(SUFFIX))
        if path:
            self.play_file(Path(path))

    def play_file(self, path: Path) -> bool:
        try:
            recording = read(path)
        except RecordingError as exc:
            self.status.show_banner(str(exc))
            return False
        return self.play(recording, path.name)

    def replay(self, message: Message) -> None:
        """An answer's Replay link: its recording, as saved next to the history."""
        name = message.stats.get("recording")
        if name:
            self.play_file(recordings_dir() / name)

    def replaying(self) -> bool:
        """A replay is shown (playing, paused or played to its end), its bar under the chat."""
        return self.player is not None

    def replayed_draft(self) -> dict | None:
        """The drafter the replayed answer was recorded with (its recording's info), or None: target only."""
        return self.player.run.info.get("draft") if self.player is not None else None

    def play(self, recording: Recording, title: str = "", speed: float | None = None) -> bool:
        """Play a recording: an answer as a new chat, a race in the race view. False while the engine works."""
        if not self.model.idle:  # a replay streams through the answer flow, as an answer does
            return False
        if recording.kind == "race":
            self.race.show(recording)
            return True
        run = recording.runs[0]
        self.close()
        turns = run.info.get("prompt") or []
        self.conversation.open(system_prompt=next((t["content"] for t in turns if t["role"] == "system"), ""),
                               messages=[Message(t["role"], t["content"]) for t in turns if t["role"] != "system"])
        draft = run.info.get("draft") or {}
        target = run.info.get("target") or {}
        params = SimpleNamespace(**{**DEFAULT_PARAMS, **(run.info.get("params") or {})})
        vocab = run.info.get("vocab") or {}
        self.details.decode = lambda token_id: vocab.get(str(token_id), f"#{token_id}")
        self.player = Player(run, parent=self.playback)
        self.answers.begin(AnswerSource(REPLAY, target_header(target.get("name", "?"), target.get("kernels")),
                                        draft.get("name", QCoreApplication.translate("Recordings", "none (target only)")), lambda: params))
        self.player.baseline.connect(self.answers.baseline)
        self.player.events.connect(self.answers.events)
        self.player.finished.connect(self.answers.finished)
        self.player.ended_early.connect(self._cut)
        if speed is not None:
            self.playback.speed.setCurrentIndex(self.playback.speed.findData(speed))
        self.playback.attach(self.player, QCoreApplication.translate("Recordings", "Replay: {0}").format(title or recording.header.get("title", "")))
        if recording.warning:
            self.status.show_banner(recording.warning, info=True)
        else:
            self.status.hide_banner()
        self.status.say(QCoreApplication.translate("Recordings", "Replaying a recording"))
        self.player.play()
        return True

    def finish_replay(self) -> None:
        """Deliver the rest of the replay at once (a screenshot of a recording shows its end)."""
        if self.player is not None:
            self.player.finish()

    def _cut(self) -> None:
        self.answers.cut()
        self.status.say(QCoreApplication.translate("Recordings", "Done · the recording ends here"))

    def stop_replay(self) -> None:
        """Stop during a replay: the answer ends where the playback is, as Stop does live."""
        player = self.player
        if player is None:
            return
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
        self.playback.detach()
