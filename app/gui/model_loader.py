"""Model loading off the GUI thread: a QObject that lives in the engine thread next to the worker, so
loading and generation never overlap. The loading itself is the chat model's (app.session.loading); this
turns its progress into signals and its failures into one line."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot

from app.errors import LoadCancelled, ModelError
from app.session.loading import LoadRequest, LoadResult, load_pair

from .load_phases import imports_progress, phase_progress

__all__ = ["LoadRequest", "LoadResult", "ModelLoader"]


class ModelLoader(QObject):
    progress = Signal(str, float)  # the phase and what it is doing, fraction 0..1 of that phase
    loaded = Signal(object)  # LoadResult
    failed = Signal(str)  # one line, shown in the window

    @Slot(object)
    def load(self, request: LoadRequest) -> None:
        try:
            result = load_pair(request, lambda fraction: self.progress.emit(*imports_progress(fraction)),
                               lambda what, p: self.progress.emit(*phase_progress(what, p)))
        except LoadCancelled:  # MeasurementCancelled is one
            return  # the window is closing: nobody waits for this pair
        except ModelError as exc:
            self.failed.emit(str(exc).splitlines()[0])
            return
        except Exception as exc:  # a broken model file must not take the app down
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
            return
        self.loaded.emit(result)
