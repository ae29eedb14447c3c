"""Models ▸ Train a draft…: distill for the loaded target in the engine thread, with progress and cancel;
the trained draft is listed in the draft picker and one click loads it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, QObject, Signal

from app.session import State

if TYPE_CHECKING:
    from .distill_dialog import DistillDialog


class TrainingFlow(QObject):
    """Handed the chat model (whose state is TRAINING while it runs), the engine thread's DistillWorker, the
    status sink, the decoding controls (whose draft picker lists the result), `load(target, draft)` that
    loads the trained draft, and the widget its dialog opens over."""

    _start = Signal(object)  # queued into the engine thread, where the worker lives

    def __init__(self, model, worker, status, controls, load, parent=None) -> None:
        super().__init__(parent)
        self.model, self.worker, self.status, self.controls, self.load = model, worker, status, controls, load
        self.parent_widget = parent
        self.dialog: DistillDialog | None = None
        self.links: tuple = ()  # the open dialog's (signal, slot) pairs on the worker
        self._start.connect(worker.start)

    def show_dialog(self):
        """The dialog for the loaded target; the one running is shown again (one training at a time)."""
        from .distill_dialog import DistillDialog

        if self.model.target is None:
            self.status.flash(QCoreApplication.translate("ModelFlow", "Load a target first"), 3000)
            return None
        if self.model.training and self.dialog is not None:
            self.dialog.open()
            return self.dialog
        dialog = DistillDialog(self.model.target, parent=self.parent_widget)
        dialog.run_requested.connect(self._run)
        worker = self.worker
        # one slot per outcome updates the dialog and the window together: two queued slots could
        # run on either side of a check made in between
        links = ((worker.progress, dialog.on_progress), (worker.done, self._done), (worker.failed, self._failed))
        for signal, slot in self.links:  # the previous dialog stops listening
            signal.disconnect(slot)
        for signal, slot in links:
            signal.connect(slot)
        self.links = links
        dialog.use_draft.connect(lambda path: self.load(self.model.target_spec, path))
        dialog.finished.connect(lambda *_: dialog.running and dialog.stop())  # closing it stops training
        self.dialog = dialog
        dialog.open()
        return dialog

    def stop(self) -> None:
        """The window closes: a running training stops; the best checkpoint so far is kept."""
        if self.dialog is not None and self.dialog.running:
            self.dialog.stop()

    def _run(self, request) -> None:
        def start() -> None:
            self.status.say(QCoreApplication.translate("ModelFlow", "Training a draft …"))
            self._start.emit(request)

        self.model.when_idle(State.TRAINING, start)

    def _done(self, report: dict) -> None:
        self._ended()
        if self.dialog is not None:
            self.dialog.on_done(report)

    def _failed(self, message: str) -> None:
        self._ended()
        if self.dialog is not None:
            self.dialog.on_failed(message)

    def _ended(self) -> None:
        self.status.say(QCoreApplication.translate("ModelFlow", "Draft training finished"))
        if self.model.target is not None:
            from app.drafting.auto import trained_drafts

            self.controls.set_trained_drafts(trained_drafts(self.model.target))
        self.model.end(State.TRAINING)
