"""Model loading off the GUI thread: a QObject that lives in the engine thread next to the worker,
so loading and generation never overlap."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from app.models import NO_DRAFT, LoadCancelled, LoadProgress, ModelError

if TYPE_CHECKING:
    from app.engine import Drafter
    from app.models import LoadedModel
    from app.models.calibration import Selection


@dataclass
class LoadRequest:
    target_spec: str
    draft_spec: str
    current: LoadedModel | None = None  # reused when target_spec names it: a draft swap loads no target
    cancel: threading.Event | None = None  # set when the app closes: the load stops at its next stage


@dataclass
class LoadResult:
    target: LoadedModel
    drafter: Drafter | None
    draft_spec: str
    seconds: float
    selection: Selection | None = None  # the measured choice ("auto") and costs behind the live γ


class ModelLoader(QObject):
    progress = Signal(str, float)  # message, fraction 0..1 of the whole load
    loaded = Signal(object)  # LoadResult
    failed = Signal(str)  # one line, shown in the window

    @Slot(object)
    def load(self, request: LoadRequest) -> None:
        start = time.perf_counter()
        try:
            self.progress.emit(self.tr("Loading torch and transformers …"), 0.0)
            # The first load imports them here, in the engine thread, while the window is already usable.
            from app.models import load_model
            from app.models.calibration import select

            target = request.current
            if target is None or target.spec != request.target_spec:
                target = load_model(request.target_spec,
                                    progress=lambda p: self._report(request, "Target", p, 0.0, 0.8))
            self._check(request)
            self.progress.emit(self.tr("Preparing draft {0} …").format(request.draft_spec), 0.8)
            # Times the drafters on this machine (or reads the cached timings) and builds the chosen
            # one; make_drafter inside runs the tokenizer pre-flight (IncompatibleModels names the mismatch).
            # Chains only for now (tree=False): the window has no token-tree switch yet, and a hand-set γ
            # there must keep the round kind from depending on timings. Replays of tree runs still draw.
            selection = select(target, request.draft_spec, tree=False,
                               progress=lambda p: self._report(request, "Draft", p, 0.8, 0.2), cancel=request.cancel)
            self._check(request)
        except LoadCancelled:  # MeasurementCancelled is one
            return  # the window is closing: nobody waits for this pair
        except ModelError as exc:
            self.failed.emit(str(exc).splitlines()[0])
            return
        except Exception as exc:  # a broken model file must not take the app down
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
            return
        self.loaded.emit(LoadResult(target, selection.drafter, request.draft_spec, time.perf_counter() - start,
                                    selection if request.draft_spec != NO_DRAFT else None))

    def _report(self, request: LoadRequest, what: str, p: LoadProgress, start: float, span: float) -> None:
        """Progress, and the point where a closing app abandons the load: every stage reports here."""
        self._check(request)
        size = f" {p.bytes_done / 2**20:.0f}/{p.bytes_total / 2**20:.0f} MiB" if p.bytes_total else ""
        self.progress.emit(f"{what}: {p.message or p.stage}{size} …", start + span * p.fraction)

    @staticmethod
    def _check(request: LoadRequest) -> None:
        if request.cancel is not None and request.cancel.is_set():
            raise LoadCancelled("loading was cancelled")
