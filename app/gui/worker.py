"""The engine's side of the GUI: a QObject living in a worker QThread that turns decode() events
into signals and does nothing else.

Headless use (benchmarks, tests), no window needed; requests go in through a queued signal. An answer is
an app.session.AnswerLoop (the pair, the params and what follows them live), run as every front end runs one:

    class Driver(QObject):
        start = Signal(object)

    thread = QThread(); worker = GenerationWorker(); worker.moveToThread(thread); thread.start()
    driver = Driver(); driver.start.connect(worker.start)
    worker.events.connect(on_round); worker.finished.connect(on_done)
    answer = AnswerLoop(target=target, drafter=drafter, params=lambda: DecodeParams(...))
    driver.start.emit(GenerationRequest(answer, input_ids))
    request.cancel.set()  # stop: the engine ends the generation before its next round
    thread.quit(); thread.wait()

Compiled decoding: `warm_up(WarmUpRequest)` builds a StaticDecoder and compiles its steps before the
next message, reporting `warm_progress(done, total)`, then `warmed(decoder, compile seconds)` or
`warm_failed(str)`; the window passes the decoder back in each GenerationRequest.

Signals: `baseline(float)` target-only seconds per step measured on this prompt (only when
requested), `events(list)` the TokenEvents and closing RoundEvent of one round, `finished(FinishedEvent)`,
`failed(str)` a one-line error. Exactly one of finished/failed ends every start().
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from app.engine import FinishedEvent, RoundEvent

if TYPE_CHECKING:  # torch loads in the engine thread, after the window shows
    import torch

    from app.engine.protocols import AnyDrafter
    from app.models import LoadedModel
    from app.session.answer_loop import AnswerLoop

    from .round_gate import RoundGate


@dataclass
class GenerationRequest:
    answer: AnswerLoop  # the pair, the params read at every round (live controls), the live controller and check
    input_ids: torch.Tensor  # [L], the chat-templated prompt
    cancel: threading.Event = field(default_factory=threading.Event)
    baseline_steps: int = 0  # time this many target-only steps first (measured speedup); 0 skips
    gate: RoundGate | None = None  # the step-through's pause: holds the engine between rounds


@dataclass
class WarmUpRequest:
    target: LoadedModel
    drafter: AnyDrafter | None
    max_gamma: int  # every verify shape up to this draft length is compiled now, not mid-answer
    cancel: threading.Event = field(default_factory=threading.Event)


class _Cancelled(Exception):
    pass


class GenerationWorker(QObject):
    baseline = Signal(float)
    events = Signal(list)
    finished = Signal(object)
    failed = Signal(str)
    warm_progress = Signal(int, int)
    warmed = Signal(object, float)
    warm_failed = Signal(str)

    @Slot(object)
    def warm_up(self, request: WarmUpRequest) -> None:
        def progress(done: int, total: int, _what: str) -> None:
            if request.cancel.is_set():  # closing: stop between shapes
                raise _Cancelled
            self.warm_progress.emit(done, total)

        try:
            from app.engine.static import StaticDecoder

            decoder = StaticDecoder(request.target.model, compile=True)
            reason = decoder.supports(request.drafter)
            if reason is not None:
                raise ValueError(reason)
            decoder.warm_up(request.drafter, request.max_gamma, progress)
            self.warmed.emit(decoder, decoder.compile_seconds)
        except _Cancelled:
            self.warm_failed.emit("cancelled")
        except Exception as exc:  # an unsupported model or a compiler failure: the window keeps eager decoding
            self.warm_failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])

    @Slot(object)
    def start(self, request: GenerationRequest) -> None:
        import torch

        answer, cancel = request.answer, request.cancel
        try:
            with torch.inference_mode():
                if request.baseline_steps:  # the speedup's baseline on this prompt, told to the live controller
                    step = answer.baseline(request.input_ids, request.baseline_steps, cancel)
                    if step is not None:
                        self.baseline.emit(step)
                gated = request.gate.wrap(answer.params, cancel) if request.gate is not None else None
                batch: list = []
                for event in answer.events(request.input_ids, cancel=cancel, params=gated):
                    if isinstance(event, FinishedEvent):
                        self.finished.emit(event)
                        return
                    batch.append(event)
                    if isinstance(event, RoundEvent):
                        self.events.emit(batch)
                        batch = []
        except Exception as exc:  # anything the engine raises ends this message, never the app
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])
