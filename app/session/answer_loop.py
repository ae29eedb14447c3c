"""AnswerLoop: one answer's live loop, the same for every front end.

It holds what an answer runs with (the target, the drafter, the static caches) and what follows it live:
the params each round reads, with the live γ controller's γ while γ is on auto; every round, fed to that
controller (app/engine/policy) and to the check of the machine profile (app.machine.live_check); and the
timed target-only step, told to the controller so it prices live passes against this machine's own step.
The window, `speclens serve`, `generate`, `record` and the benchmark run their answers through `events`,
so no front end feeds a controller itself, and a recording decodes with live γ as the app does.

No Qt, and no torch at import: the window's engine thread, the server's worker and the CLI all run it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from app.engine.events import RoundEvent

if TYPE_CHECKING:
    import threading

    import torch

    from app.engine.events import Event
    from app.engine.params import DecodeParams
    from app.engine.protocols import AnyDrafter, LiveController
    from app.engine.static import StaticDecoder
    from app.machine.live_check import Disagreement, LiveCheck
    from app.models import LoadedModel

Params = Callable[[], "DecodeParams"]


class AnswerLoop:
    """One answer on a loaded pair: run it with `events`; read `params` for its rounds (a round gate wraps it)."""

    def __init__(self, *, target: LoadedModel, params: DecodeParams | Params, drafter: AnyDrafter | None = None,
                 static: StaticDecoder | None = None, controller: LiveController | None = None,
                 gamma_auto: bool | Callable[[], bool] = True, check: LiveCheck | None = None,
                 step: float | None = None) -> None:
        """params: the answer's sampling settings, or a callable read every round (live controls). controller:
        the pair's live γ controller; it hears every round whatever sets γ (any γ teaches it α and the
        costs), and sets γ while `gamma_auto` (read every round when callable). check: the machine profile's
        live check, fed the rounds of the dynamic cache it timed. step: the target-only step last timed in
        this chat (or server), told to the controller first, for a controller made since it was timed."""
        self.target, self.drafter, self.static = target, drafter, static
        self._base: Params = params if callable(params) else (lambda: params)
        self._auto: Callable[[], bool] = gamma_auto if callable(gamma_auto) else (lambda: gamma_auto)
        self.controller = controller if drafter is not None else None  # target-only rounds teach it nothing
        self.check = check if static is None else None  # compiled or static steps are not what it timed
        self.context = 0  # tokens before the next round: the check leaves out rounds far past the probe's
        if step:
            self.observe_step(step)

    def params(self) -> DecodeParams:
        """The params of the next round: the front end's, with the controller's γ while γ is on auto."""
        base = self._base()
        if self.controller is not None and self._auto():
            return replace(base, gamma=self.controller.gamma())
        return base

    def observe(self, event: RoundEvent) -> None:
        """A round of this answer: to the live controller and the machine check."""
        if self.controller is not None:
            self.controller.observe(event)
        if self.check is not None:
            self.check.observe(event, self.context)
        self.context += event.emitted

    def observe_step(self, seconds: float) -> None:
        """A target-only step of the real loop timed in this chat: live passes are priced against it."""
        if self.controller is not None:
            self.controller.observe_step(seconds)

    def events(self, input_ids: torch.Tensor, *, cancel: threading.Event | None = None,
               params: Params | None = None) -> Iterator[Event]:
        """decode()'s events for the prompt input_ids [L], every RoundEvent observed as it passes. params:
        what the rounds read instead of `self.params` (the window's round gate wrapping it)."""
        from app.engine import decode

        target = self.target
        self.context = len(input_ids.reshape(-1))
        for event in decode(target.model, input_ids, self.drafter, params or self.params,
                            stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size,
                            tokenizer=target.tokenizer, cancel=cancel, static=self.static):
            if isinstance(event, RoundEvent):
                self.observe(event)
            yield event

    def baseline(self, input_ids: torch.Tensor, steps: int, cancel: threading.Event | None = None) -> float | None:
        """Time `steps` target-only steps on this prompt (the measured speedup's baseline, app.machine.baseline)
        and tell the controller; seconds a step, None when none ran."""
        from app.machine.baseline import time_target_steps

        step = time_target_steps(self.target, input_ids, self._base(), steps=steps, static=self.static,
                                 cancel=cancel)
        if step is not None:
            self.observe_step(step)
        return step

    def disagreement(self) -> Disagreement | None:
        """After the answer: the machine check's verdict (app.machine.live_check.LiveCheck.verdict: the profile
        is then disputed, and the next load measures it again); None when it holds or has not run."""
        return self.check.verdict() if self.check is not None else None
