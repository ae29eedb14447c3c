"""Every decoded answer (typed, or requested through the local server) is recorded as it streams and saved
next to the history database, named for its conversation; the last recording is kept for File ▸ Save
recording (a race's too). A replay is a recording already and is not recorded again."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path

from PySide6.QtCore import QCoreApplication

from app.paths import user_data_dir
from app.recording import SUFFIX, Recording, RunBuilder, write
from app.recording.builder import drafter_info, header, model_info, top_vocab


def recordings_dir() -> Path:
    return user_data_dir() / "recordings"


def remove_recordings(names: list[str]) -> None:
    """Delete the recordings of answers that left the history (a deleted chat, a regenerated answer).
    Only plain file names inside the recordings folder: a name in a stored message is never a path."""
    for name in names:
        if name and Path(name).name == name:
            (recordings_dir() / name).unlink(missing_ok=True)


class AnswerRecorder:
    """Handed the chat model (the pair an answer is recorded with) and the status sink (a file that could
    not be written is said there); the answer flow feeds it what the engine emits."""

    def __init__(self, model, status) -> None:
        self.model, self.status = model, status
        self.builder: RunBuilder | None = None
        self.last: Recording | None = None

    def begin(self, turns: list[dict], params) -> None:
        """A decoded answer starts: its run is recorded as it streams."""
        model = self.model
        self.builder = RunBuilder({
            "label": QCoreApplication.translate("Recordings", "speculative") if model.drafter is not None
            else QCoreApplication.translate("Recordings", "target only"),
            "prompt": turns,
            "target": model_info(model.target),
            "draft": drafter_info(model.drafter),
            "params": asdict(params),
            "device": str(model.target.device),
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

    def end(self, conv_id: int | None) -> str | None:
        """The answer ended: its recording is kept as the last one and, for a saved conversation, written to
        the recordings folder. The file's name (the answer's stats name it), or None."""
        builder, self.builder = self.builder, None
        if builder is None:
            return None
        builder.run.info["vocab"] = top_vocab(builder.run, self.model.target.tokenizer)
        turns = builder.run.info["prompt"]
        title = next((t["content"] for t in reversed(turns) if t["role"] == "user"), "")[:60]
        self.last = Recording(header("answer", title, builder.run.info["device"]), [builder.run])
        if conv_id is None:
            return None
        path = recordings_dir() / f"{conv_id}-{int(time.time() * 1000)}{SUFFIX}"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write(path, self.last)
        except OSError as exc:
            self.status.show_banner(QCoreApplication.translate("Recordings", "The recording was not saved: {0}").format(exc))
            return None
        return path.name

    def keep(self, recording: Recording) -> None:
        """A recording made elsewhere (a race) becomes the last one: File ▸ Save recording saves it."""
        self.last = recording

    def latest(self, messages) -> Path | Recording | None:
        """What File ▸ Save recording saves: the last answer of the open chat as saved in history, else the
        last recording made."""
        for m in reversed(messages):
            name = m.stats.get("recording") if m.role == "assistant" else None
            if name and (recordings_dir() / name).is_file():
                return recordings_dir() / name
        return self.last
