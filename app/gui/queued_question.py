"""A question sent while the models load: held and shown as queued, sent once they are ready, cancelled by
Stop (the text goes back into the input box). Never lost: a failed load also gives the text back."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QLabel


class QueuedQuestion:
    """Owns the note above the input box; the window asks it to hold, release or give back one question."""

    def __init__(self, window) -> None:
        self.window = window
        self.text: str | None = None
        self.accepting = False  # while a model load runs (not a compile warm-up: that keeps Send off)
        self.note = QLabel(objectName="queued", wordWrap=True, visible=False)
        layout = window.centralWidget().layout()
        layout.insertWidget(layout.count() - 1, self.note)  # just above the input row, the layout's last item

    @property
    def waiting(self) -> bool:
        return self.text is not None

    def hold(self, text: str) -> None:
        self.text = text
        self.window.input.clear()
        short = " ".join(text.split())
        short = short if len(short) <= 80 else short[:79] + "…"
        self.note.setText(QCoreApplication.translate(
            "QueuedQuestion", "“{0}” will be sent when the model is ready · Stop cancels").format(short))
        self.note.setVisible(True)

    def release(self) -> None:
        """The models are ready: send the held question, unless the window is busy (an example went first);
        then it goes back into the input box. Still held while the compile warm-up that follows a load runs."""
        self.accepting = False
        if self.window.model.loading:
            return
        text, self.text = self.text, None
        self.note.setVisible(False)
        if text is None:
            return
        box = self.window.input
        typed = box.toPlainText()  # typed while the question waited: kept
        box.setPlainText(text)
        self.window.chat_flow.send()
        if box.toPlainText():  # not sent (busy): both stay in the box
            box.setPlainText(text + ("\n" + typed if typed.strip() else ""))
        else:
            box.setPlainText(typed)

    def load_failed(self) -> None:
        self.accepting = False
        self.give_back(QCoreApplication.translate(
            "QueuedQuestion", "Not sent: the models did not load. Your question is back in the box."))

    def give_back(self, reason: str | None = None) -> None:
        """Stop, or a failed load: the question returns to the input box, unsent."""
        text, self.text = self.text, None
        if text is None:
            return
        if not self.window.input.toPlainText().strip():
            self.window.input.setPlainText(text)
        self.note.setText(reason or "")
        self.note.setVisible(bool(reason))
