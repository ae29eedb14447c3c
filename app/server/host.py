"""The engine host: one loaded pair, one worker thread running `decode` at batch size 1, a bounded queue.

Whoever holds a loaded pair (the `serve` command, the window) builds an EngineHost over it and submits
jobs; each job's items go to its `deliver` callable, in the worker thread, in order: one `Step` per
round (the round's engine events and the text it adds), then one `Done`. Observers (the history, the
window) see every answer's items the same way. `Answer.cancel()` stops an answer before its next round
(or before it starts, while it waits). Past `max_waiting` queued answers, submit raises QueueFull.
"""

from __future__ import annotations

import copy
import logging
import math
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from app.engine import DecodeParams, Event, FinishedEvent, RoundEvent, TokenEvent
from app.session.answer_loop import AnswerLoop

from . import MAX_WAITING
from .stops import StopText
from .usage import speclens_usage

if TYPE_CHECKING:
    import torch

    from app.engine.protocols import AnyDrafter, LiveController
    from app.engine.static import StaticDecoder
    from app.machine.live_check import LiveCheck
    from app.models import LoadedModel
    from app.session import ChatModel

log = logging.getLogger(__name__)

RECENT = 8  # answers whose durations estimate Retry-After
# The engine's FinishedEvent.reason -> OpenAI's finish_reason; "cancelled" only reaches a client that is gone.
FINISH_REASONS = {"eos": "stop", "length": "length", "context": "length", "cancelled": "cancelled"}


class HostClosed(Exception):
    """The host has stopped: nothing submitted now would ever run."""


class QueueFull(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"the engine is busy: {retry_after} s until a place in the queue is likely free")
        self.retry_after = retry_after


@dataclass
class ServedPair:
    """What the host serves: the target, its drafter (None: target-only) and the default sampling."""

    target: LoadedModel
    drafter: AnyDrafter | None
    params: DecodeParams  # defaults for fields a request leaves out
    auto: LiveController | None = None  # live γ shared by the answers; only the worker thread touches it
    static: StaticDecoder | None = None
    # the check of the target's machine profile against live rounds (app.machine.live_check), fed every answer
    check: LiveCheck | None = None

    @classmethod
    def of(cls, model: ChatModel, params: DecodeParams, gamma_auto: bool = True) -> ServedPair:
        """The pair a chat model holds (the window's, or `speclens serve`'s), as served: its target, drafter
        and compiled steps, its live γ controller when γ is auto, and its machine check."""
        if model.target is None:
            raise ValueError("no pair is loaded to serve")
        return cls(model.target, model.drafter, params, model.auto if gamma_auto else None, model.static, model.live)

    @property
    def model_id(self) -> str:
        return self.target.name

    @property
    def draft_name(self) -> str:
        return self.drafter.name if self.drafter is not None else "none"


@dataclass(frozen=True)
class Job:
    input_ids: torch.Tensor  # [L], already templated
    params: DecodeParams
    auto_gamma: bool = False  # γ follows the pair's AutoGamma, re-read every round
    target_only: bool = False  # leave the drafter out for this answer
    stop: tuple[str, ...] = ()
    messages: tuple[dict[str, str], ...] = ()  # the turns answered, for observers (history, window)


@dataclass(frozen=True)
class Step:
    """One round: its TokenEvents (rejected ones included) and closing RoundEvent, and the text it adds.

    After a stop sequence the round's later tokens are left out, and `text` ends before the sequence.
    """

    events: tuple[Event, ...]
    text: str

    @property
    def tokens(self) -> tuple[TokenEvent, ...]:
        return tuple(e for e in self.events if isinstance(e, TokenEvent) and e.emitted)

    @property
    def round(self) -> RoundEvent:
        event = self.events[-1]
        assert isinstance(event, RoundEvent)  # a round's events end with it
        return event


@dataclass(frozen=True)
class Done:
    finish_reason: str  # "stop" (end token or stop sequence), "length", "cancelled" or "error"
    finished: FinishedEvent | None  # None when it never ran or the engine failed
    text: str  # the whole answer as shown
    tail: str  # its end that no Step carried: text held back while it could have begun a stop sequence
    tokens: tuple[TokenEvent, ...]  # the emitted tokens kept
    rounds: tuple[RoundEvent, ...]
    usage: dict  # speclens_usage of the rounds
    prompt_tokens: int
    error: str | None = None

    @property
    def completion_tokens(self) -> int:
        return len(self.tokens)


Item = Step | Done


@dataclass(eq=False)
class Answer:
    job: Job
    deliver: Callable[[Item], None]
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:24])
    created: float = field(default_factory=time.time)
    rounds_done: int = 0
    cancel_round: int | None = None  # rounds done when cancel() was first called
    done: Done | None = None
    _cancel: threading.Event = field(default_factory=threading.Event)

    @property
    def cancel_event(self) -> threading.Event:
        """The flag decode() reads before every round; setting it directly skips the cancel_round record."""
        return self._cancel

    def cancel(self) -> None:
        if not self._cancel.is_set():
            self._cancel.set()  # first: a round the worker ends meanwhile counts as before the cancel
            self.cancel_round = self.rounds_done

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()


class EngineHost:
    def __init__(self, pair: ServedPair, *, max_waiting: int = MAX_WAITING, measure_baseline: bool = True) -> None:
        if max_waiting < 1:
            raise ValueError(f"the queue must hold at least 1 request, got {max_waiting}")
        self.pair = pair
        self.max_waiting = max_waiting
        self.baseline_step: float | None = None
        self._measure_baseline = measure_baseline
        self._queue: queue.Queue[Answer | None] = queue.Queue()
        self._lock = threading.Lock()
        self._waiting = 0
        self.max_waiting_seen = 0  # the most answers ever queued at once (the bound holds: <= max_waiting)
        self.running: Answer | None = None
        self.served = 0
        self._durations: list[float] = []
        self._observers: list[Callable[[Answer, Item], None]] = []
        # Requests are tokenized on the server's threads with a copy: a tokenizer is not safe to share
        # with the worker thread's detokenizer.
        self._encoder = replace(pair.target, tokenizer=copy.deepcopy(pair.target.tokenizer))
        self._encode_lock = threading.Lock()
        self._thread = threading.Thread(target=self._work, name="speclens-engine-host", daemon=True)
        self._started = threading.Event()
        self._closed = False

    # The server's side

    def start(self, wait: bool = True) -> None:
        """Start the worker (which first times the target-only step); wait: until it is ready."""
        self._thread.start()
        if wait:
            self._started.wait()

    def encode_chat(self, messages: list[dict[str, str]]) -> torch.Tensor:
        with self._encode_lock:
            return self._encoder.encode_chat(messages)

    def encode_text(self, text: str) -> torch.Tensor:
        import torch

        with self._encode_lock:
            return torch.tensor(self._encoder.tokenizer(text)["input_ids"], dtype=torch.long)

    @property
    def context_limit(self) -> int | None:
        from app.engine.kv import context_limit

        return context_limit(self.pair.target.model)

    def submit(self, job: Job, deliver: Callable[[Item], None]) -> Answer:
        answer = Answer(job, deliver)
        with self._lock:
            if self._closed:
                raise HostClosed("the engine host has stopped")
            if self._waiting >= self.max_waiting:
                raise QueueFull(self._retry_after())
            self._waiting += 1
            self.max_waiting_seen = max(self.max_waiting_seen, self._waiting)
            self._queue.put(answer)
        return answer

    def subscribe(self, observer: Callable[[Answer, Item], None]) -> None:
        """observer(answer, item) for every item of every answer, in the worker thread, after its deliver."""
        self._observers.append(observer)

    @property
    def waiting(self) -> int:
        return self._waiting

    def queued(self) -> list[Answer]:
        """The answers accepted and not yet started, oldest first (a snapshot)."""
        with self._queue.mutex:
            return [a for a in self._queue.queue if a is not None]

    def close(self, timeout: float = 30.0) -> None:
        """Cancel what runs, refuse what waits, and stop the worker."""
        with self._lock:
            self._closed = True
        running = self.running
        if running is not None:
            running.cancel()
        while True:
            try:
                answer = self._queue.get_nowait()
            except queue.Empty:
                break
            if answer is not None:
                self._finish(answer, self._empty_done(answer, "cancelled"))
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _retry_after(self) -> int:
        per_answer = sum(self._durations) / len(self._durations) if self._durations else 1.0
        return max(1, math.ceil(per_answer * (self._waiting + 1)))

    # The worker thread

    def _work(self) -> None:
        import torch

        with torch.inference_mode():
            if self._measure_baseline:
                try:
                    self.baseline_step = _time_step(self.pair)
                except Exception as exc:  # no measured speedup then, but the server still serves
                    log.warning("could not time the target-only step: %s", exc)
            self._started.set()
            while True:
                answer = self._queue.get()
                if answer is None:
                    return
                with self._lock:
                    self._waiting -= 1
                    self.running = answer
                start = time.perf_counter()
                done = self._empty_done(answer, "cancelled") if answer.cancelled else self._run(answer)
                self._finish(answer, done)
                with self._lock:
                    self.running = None
                    self.served += 1
                    self._durations = (self._durations + [time.perf_counter() - start])[-RECENT:]

    def _run(self, answer: Answer) -> Done:
        job, pair = answer.job, self.pair
        # As the window runs an answer: live γ (when asked) from the pair's controller, which hears every round
        # and, first, this server's own timed step, so its passes are priced against it (live_verify.py); every
        # round checked against the machine profile.
        loop = AnswerLoop(target=pair.target, params=job.params, drafter=None if job.target_only else pair.drafter,
                          static=pair.static, controller=pair.auto, gamma_auto=job.auto_gamma, check=pair.check,
                          step=self.baseline_step)
        try:
            return self._answer(answer, loop)
        finally:
            self._check_machine(loop)

    def _check_machine(self, loop: AnswerLoop) -> None:
        """After an answer, as the window does: when the live rounds disagree with the machine profile, the
        profile is disputed (the next load measures it again) and the log says so, once per loaded profile."""
        try:
            why = loop.disagreement()
        except Exception:  # the check's cache write failed: it never ends the server
            log.exception("the machine check failed")
            return
        if why is not None and loop.check is not None:
            self.pair.target.profile = loop.check.profile
            log.warning("%s: the next load of %s measures this machine again", why.text, self.pair.model_id)

    def _answer(self, answer: Answer, loop: AnswerLoop) -> Done:
        job = answer.job
        stops = StopText(job.stop)
        batch: list[Event] = []
        tokens: list[TokenEvent] = []
        rounds: list[RoundEvent] = []
        text: list[str] = []  # this round's pieces
        shown: list[str] = []  # every round's text
        finished = None
        stopped = False
        try:
            for event in loop.events(job.input_ids, cancel=answer._cancel):
                if isinstance(event, FinishedEvent):
                    finished = event
                    break
                if isinstance(event, TokenEvent):
                    if stopped:
                        continue
                    batch.append(event)
                    if event.emitted:
                        tokens.append(event)
                        piece = stops.push(event.text)
                        text.append(piece)
                        if stops.matched:  # the rest of this round is not part of the answer
                            stopped = True
                            answer._cancel.set()
                    continue
                rounds.append(event)
                round_text = "".join(text)
                text.clear()
                shown.append(round_text)
                answer.rounds_done += 1
                self._emit(answer, Step((*batch, event), round_text))
                batch = []
        except Exception as exc:  # the engine's failure ends this answer, never the server
            message = f"{type(exc).__name__}: {exc}".splitlines()[0]
            return self._done(answer, "error", None, tokens, rounds, shown, stops, error=message)
        assert finished is not None  # decode() ends every answer with one, a stopped one too
        reason = "stop" if stopped else FINISH_REASONS[finished.reason]
        return self._done(answer, reason, finished, tokens, rounds, shown, stops)

    def _done(self, answer, reason, finished, tokens, rounds, shown, stops, error=None) -> Done:
        tail = stops.flush()
        return Done(reason, finished, "".join(shown) + tail, tail, tuple(tokens), tuple(rounds),
                    speclens_usage(rounds, self._drafter_name(answer), self.baseline_step),
                    len(answer.job.input_ids), error)

    def _empty_done(self, answer: Answer, reason: str) -> Done:
        return Done(reason, None, "", "", (), (),
                    speclens_usage((), self._drafter_name(answer), self.baseline_step), len(answer.job.input_ids))

    def _drafter_name(self, answer: Answer) -> str:
        return "none" if answer.job.target_only else self.pair.draft_name

    def _emit(self, answer: Answer, item: Item) -> None:
        try:
            answer.deliver(item)
        except Exception as exc:  # its client is gone (the server stopped); the answer goes on for observers
            log.debug("an answer's item was not delivered: %s", exc)
        for observer in list(self._observers):
            try:
                observer(answer, item)
            except Exception:
                log.exception("an answer observer failed")

    def _finish(self, answer: Answer, done: Done) -> None:
        answer.done = done
        self._emit(answer, done)


def _time_step(pair: ServedPair) -> float | None:
    from .baseline import time_target_step

    return time_target_step(pair)
