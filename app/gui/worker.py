"""The engine's side of the GUI: a QObject living in a worker QThread that turns decode() events
into signals and does nothing else.

Headless use (benchmarks, tests), no window needed; requests go in through a queued signal:

    class Driver(QObject):
        start = Signal(object)

    thread = QThread(); worker = GenerationWorker(); worker.moveToThread(thread); thread.start()
    driver = Driver(); driver.start.connect(worker.start)
    worker.events.connect(on_round); worker.finished.connect(on_done)
    driver.start.emit(GenerationRequest(target, input_ids, drafter, params=lambda: DecodeParams(...)))
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, Slot

from app.engine import DecodeParams, FinishedEvent, RoundEvent

if TYPE_CHECKING:  # torch loads in the engine thread, after the window shows
    import torch

    from app.engine import Drafter
    from app.engine.static import StaticDecoder
    from app.models import LoadedModel


@dataclass
class GenerationRequest:
    target: LoadedModel
    input_ids: torch.Tensor  # [L], the chat-templated prompt
    drafter: Drafter | None
    params: Callable[[], DecodeParams]  # read at every round: live controls apply at the next round
    cancel: threading.Event = field(default_factory=threading.Event)
    baseline_steps: int = 0  # time this many target-only steps first (measured speedup); 0 skips
    observe: Callable[[RoundEvent], None] | None = None  # sees every round in the engine thread (auto γ)
    observe_step: Callable[[float], None] | None = None  # the timed target-only step, in the engine thread (auto γ)
    static: StaticDecoder | None = None  # compiled static-cache steps, when the window turned them on


@dataclass
class WarmUpRequest:
    target: LoadedModel
    drafter: Drafter | None
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

        from app.engine import decode

        target = request.target
        common = dict(
            stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size, cancel=request.cancel
        )
        try:
            with torch.inference_mode():
                if request.baseline_steps:
                    step = self._time_target_steps(request)
                    if step is not None:
                        if request.observe_step is not None:
                            request.observe_step(step)
                        self.baseline.emit(step)
                batch: list = []
                for event in decode(
                    target.model, request.input_ids, request.drafter, request.params,
                    tokenizer=target.tokenizer, static=request.static, **common,
                ):
                    if isinstance(event, FinishedEvent):
                        self.finished.emit(event)
                        return
                    batch.append(event)
                    if isinstance(event, RoundEvent):
                        if request.observe is not None:
                            request.observe(event)
                        self.events.emit(batch)
                        batch = []
        except Exception as exc:  # anything the engine raises ends this message, never the app
            self.failed.emit(f"{type(exc).__name__}: {exc}".splitlines()[0])

    @staticmethod
    def _time_target_steps(request: GenerationRequest) -> float | None:
        """The speedup baseline on this prompt (app.models.baseline: the median step, prefill left out)."""
        from app.models.baseline import time_target_steps

        read = getattr(request.params, "ungated", request.params)  # not held by a paused step-through
        return time_target_steps(request.target, request.input_ids, read(), steps=request.baseline_steps,
                                 static=request.static, cancel=request.cancel)
