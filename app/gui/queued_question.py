"""A question sent while the models load: held and shown as queued, sent once they are ready, cancelled by
Stop (the text goes back into the input box). Never lost: a failed load also gives the text back."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QLabel

from app.session import Observers


class QueuedQuestion:
    """Owns the note above the input box (the window places it) and holds one question; handed the input
    box it takes the question from and gives it back to. The chat flow sends it (ChatFlow.release_queued)."""

    def __init__(self, input_box) -> None:
        self.input = input_box
        self.text: str | None = None
        self.accepting = False  # while a model load runs (not a compile warm-up: that keeps Send off)
        self.note = QLabel(objectName="queued", wordWrap=True, visible=False)
        self.changed = Observers()  # (): held, released, given back, or accepting changed

    @property
    def waiting(self) -> bool:
        return self.text is not None

    def accept(self) -> None:
        """A model load starts: Send holds the question until it ends."""
        self.accepting = True
        self.changed.emit()

    def hold(self, text: str) -> None:
        self.text = text
        self.input.clear()
        short = " ".join(text.split())
        short = short if len(short) <= 80 else short[:79] + "…"
        self.note.setText(QCoreApplication.translate(
            "QueuedQuestion", "“{0}” will be sent when the model is ready · Stop cancels").format(short))
        self.note.setVisible(True)
        self.changed.emit()

    def release(self, still_loading: bool) -> str | None:
        """The load ended: the question to send now, if one waits; still held (None) while the compile
        warm-up that follows a load runs."""
        self.accepting = False
        if still_loading:
            self.changed.emit()
            return None
        text, self.text = self.text, None
        self.note.setVisible(False)
        self.changed.emit()
        return text

    def load_failed(self) -> None:
        self.accepting = False
        self.give_back(QCoreApplication.translate(
            "QueuedQuestion", "Not sent: the models did not load. Your question is back in the box."))

    def give_back(self, reason: str | None = None) -> None:
        """Stop, or a failed load: the question returns to the input box, unsent."""
        text, self.text = self.text, None
        if text is not None:
            if not self.input.toPlainText().strip():
                self.input.setPlainText(text)
            self.note.setText(reason or "")
            self.note.setVisible(bool(reason))
        self.changed.emit()
