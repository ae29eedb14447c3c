"""Model loading off the GUI thread: a QObject that lives in the engine thread next to the worker,
so loading and generation never overlap."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from app import startup_trace
from app.models import NO_DRAFT, LoadCancelled, LoadProgress, ModelError

from .load_phases import imports_progress, phase_progress

if TYPE_CHECKING:
    from app.engine import Drafter
    from app.models import LoadedModel
    from app.models.calibration import Selection


@dataclass
class LoadRequest:
    target_spec: str
    draft_spec: str
    current: LoadedModel | None = None  # reused when target_spec names it: a draft swap loads no target
    dtype: str = "auto"  # the target's dtype: "auto" (timed on a CPU), "bfloat16", "float32"
    cancel: threading.Event | None = None  # set when the app closes: the load stops at its next stage
    anyway: Selection | None = None  # auto's target-only choice: build its fastest measured drafter instead


@dataclass
class LoadResult:
    target: LoadedModel
    drafter: Drafter | None
    draft_spec: str
    seconds: float
    selection: Selection | None = None  # the measured choice ("auto") and costs behind the live γ
    anyway: bool = False  # speculating although auto chose target-only ("Show speculation anyway")


class ModelLoader(QObject):
    progress = Signal(str, float)  # the phase and what it is doing, fraction 0..1 of that phase
    loaded = Signal(object)  # LoadResult
    failed = Signal(str)  # one line, shown in the window

    @Slot(object)
    def load(self, request: LoadRequest) -> None:
        start = time.perf_counter()
        try:
            self.progress.emit(*imports_progress(0.0))
            # The first load imports them here, in the engine thread, once the window has painted.
            from app.models.fast_import import import_model_stack

            import_model_stack(progress=lambda fraction: self.progress.emit(*imports_progress(fraction)))
            from app.models import load_model
            from app.models.calibration import select

            target = request.current
            if target is None or target.spec != request.target_spec or \
                    target.extra.get("requested_dtype", "auto") != request.dtype:
                import torch

                target = None  # released before the next copy loads
                dtype = None if request.dtype == "auto" else getattr(torch, request.dtype)
                target = load_model(request.target_spec, dtype=dtype,
                                    progress=lambda p: self._report(request, "Target", p))
            self._check(request)
            self.progress.emit(*phase_progress("Draft", LoadProgress("draft", 0.0, request.draft_spec)))
            # Times the drafters on this machine (or reads the cached timings) and builds the chosen
            # one; make_drafter inside runs the tokenizer pre-flight (IncompatibleModels names the mismatch).
            if request.anyway is not None:  # on auto's measurements: nothing is timed again
                from app.models.speculate_anyway import speculate_anyway

                selection = speculate_anyway(request.anyway, target)
            else:
                # Chains only for now (tree=False): the window has no token-tree switch yet, and a hand-set γ
                # there must keep the round kind from depending on timings. Replays of tree runs still draw.
                selection = select(target, request.draft_spec, tree=False,
                                   progress=lambda p: self._report(request, "Draft", p),
                                   cancel=request.cancel)
            self._check(request)
            startup_trace.mark("drafter")
        except LoadCancelled:  # MeasurementCancelled is one
            return  # the window is closing: nobody waits for this pair
        except ModelError as exc:
            self.failed.emit(str(exc).splitlines()[0])
            return
        except Exception as exc:  # a broken model file must not take the app down
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
            return
        self.loaded.emit(LoadResult(target, selection.drafter, request.draft_spec, time.perf_counter() - start,
                                    selection if request.draft_spec != NO_DRAFT else None,
                                    anyway=request.anyway is not None))

    def _report(self, request: LoadRequest, what: str, p: LoadProgress) -> None:
        """Progress, and the point where a closing app abandons the load: every stage reports here."""
        self._check(request)
        if what == "Target":
            startup_trace.mark_load_stage(p.stage)
        self.progress.emit(*phase_progress(what, p))

    @staticmethod
    def _check(request: LoadRequest) -> None:
        if request.cancel is not None and request.cancel.is_set():
            raise LoadCancelled("loading was cancelled")
