"""ChatModel: the loaded pair of a session, its drafter choice and live γ, and the one State of its engine.

The front end owns the widgets; this owns the facts they show: the target, the drafter and the measured
Selection behind it, the live γ controller (a protocols.LiveController), the StaticDecoder while compiled
steps are on, the token-tree mode, why auto switched to target-only live, and what the engine is doing.
Its engine work is serial (one engine thread, one host worker), so the state is one value; work asked
for while the engine is busy waits in order and starts when it is idle again (a draft chosen while
answering loads for the next message). Observers hear every change in the thread that made it.
No Qt, and no torch at import: the window and `speclens serve` both hold one.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING

from app.drafting.registry import AUTO
from app.engine.policy import AUTO_GAMMA_START, TREE_MODES, Switch, recheck

from .answer_loop import AnswerLoop
from .observers import Observers

if TYPE_CHECKING:
    from app.drafting.auto import Selection
    from app.engine.params import DecodeParams
    from app.engine.protocols import AnyDrafter, LiveController
    from app.engine.static import StaticDecoder
    from app.machine.live_check import Disagreement, LiveCheck
    from app.models import LoadedModel


class State(Enum):
    IDLE = "idle"
    LOADING = "loading"  # a pair loading and being timed, or compiled steps warming up: Send waits
    GENERATING = "generating"  # an answer streams (live, or a recording replayed)
    SERVING = "serving"  # the local server holds the engine: the front end's own decoding waits
    TRAINING = "training"  # a draft is being distilled
    RACING = "racing"  # two runs of one prompt, one after the other
    CLOSING = "closing"  # the front end is shutting down: nothing new starts


class ChatModel:
    def __init__(self, target_spec: str = "default", draft_spec: str = AUTO, tree_mode: str = AUTO) -> None:
        self.target_spec, self.draft_spec = target_spec, draft_spec
        self.tree_mode = tree_mode if tree_mode in TREE_MODES else AUTO
        self.target: LoadedModel | None = None
        self.drafter: AnyDrafter | None = None
        self.selection: Selection | None = None  # the measured drafter choice of the loaded pair
        self.auto: LiveController | None = None  # its live γ controller
        self.static: StaticDecoder | None = None  # while compiled decoding steps are on and warmed up
        self.switched: Switch | None = None  # why auto went target-only after live rounds, if it did
        self.live: LiveCheck | None = None  # the loaded target's machine profile against live rounds
        self.state = State.IDLE
        self.closing = threading.Event()  # set once closing: a load in flight stops at its next stage
        self._waiting: deque[tuple[State, Callable[[], None]]] = deque()
        self.state_changed = Observers()  # (State)
        self.pair_changed = Observers()  # (): target, drafter, selection, live γ or switch changed
        self.tree_mode_changed = Observers()  # (str)

    # --- the state -------------------------------------------------------------------------------
    @property
    def idle(self) -> bool:
        return self.state is State.IDLE

    @property
    def loading(self) -> bool:
        return self.state is State.LOADING

    @property
    def generating(self) -> bool:
        """An answer streams, or the server holds the engine: no other answer may start."""
        return self.state in (State.GENERATING, State.SERVING)

    @property
    def training(self) -> bool:
        return self.state is State.TRAINING

    @property
    def racing(self) -> bool:
        return self.state is State.RACING

    @property
    def waiting(self) -> int:
        """Work asked for while busy, not started yet."""
        return len(self._waiting)

    def begin(self, state: State) -> bool:
        """Enter `state` now if the engine is idle; False (nothing changes) when it is busy."""
        if self.state is not State.IDLE:
            return False
        self._set(state)
        return True

    def when_idle(self, state: State, start: Callable[[], None]) -> bool:
        """Run `start` in `state`: now when idle (True), else after the work before it ends (False).
        Nothing waits while closing."""
        if self.closing.is_set():
            return False
        if self.begin(state):
            start()
            return True
        self._waiting.append((state, start))
        return False

    def end(self, state: State) -> None:
        """`state`'s work is over: idle, then the next waiting work starts. Ending another state does nothing."""
        if self.state is not state:
            return
        self._set(State.IDLE)
        if self._waiting and self.state is State.IDLE and not self.closing.is_set():
            state, start = self._waiting.popleft()
            self._set(state)
            start()

    def close(self) -> None:
        self._waiting.clear()
        self.closing.set()
        self._set(State.CLOSING)

    def _set(self, state: State) -> None:
        if state is not self.state:
            self.state = state
            self.state_changed.emit(state)

    # --- the pair --------------------------------------------------------------------------------
    def install(self, target: LoadedModel, drafter: AnyDrafter | None, draft_spec: str,
                selection: Selection | None = None, auto: LiveController | None = None) -> bool:
        """A loaded pair replaces the previous one; its live γ is the selection's unless given. The compiled
        steps were built for the previous pair. True when the target itself changed."""
        changed = target is not self.target
        self.target, self.drafter, self.selection = target, drafter, selection
        self.auto = auto if auto is not None or selection is None else selection.auto_gamma()
        self.target_spec, self.draft_spec = target.spec, draft_spec
        self.switched = None
        self.static = None
        from app.machine.live_check import LiveCheck

        self.live = LiveCheck.of(target)
        self.pair_changed.emit()
        return changed

    def answer(self, params: DecodeParams | Callable[[], DecodeParams], *, gamma_auto: bool | Callable[[], bool] = True,
               target_only: bool = False, step: float | None = None) -> AnswerLoop:
        """One answer on the loaded pair (its drafter unless target_only, the compiled steps while on), followed
        live by the pair's controller and machine check (answer_loop.py). step: the target-only step last
        timed in this chat."""
        if self.target is None:
            raise RuntimeError("no pair is loaded")
        return AnswerLoop(target=self.target, params=params, drafter=None if target_only else self.drafter,
                          static=self.static, controller=self.auto, gamma_auto=gamma_auto, check=self.live, step=step)

    def check_machine(self) -> Disagreement | None:
        """After an answer: when its rounds and the ones before disagree with the target's machine profile
        (live_check.py), the profile is marked disputed in the cache and the disagreement returned, once per
        loaded profile; the next load measures anew (Models ▸ Measure this machine again does it now)."""
        why = self.live.verdict() if self.live is not None else None
        if why is not None and self.target is not None and self.live is not None:
            self.target.profile = self.live.profile
        return why

    def recheck(self, measured: float | None, new_tokens: int) -> Switch | None:
        """After an answer with draft 'auto': the engine policy's verdict on keeping the draft
        (app.engine.policy.recheck); on a switch the drafter goes and the pair runs target-only."""
        if self.draft_spec != AUTO or self.auto is None or self.drafter is None:
            return None
        switch = recheck(self.auto, measured, new_tokens)
        if switch is not None:
            self.switched = switch
            self.drafter, self.auto = None, None
            self.pair_changed.emit()
        return switch

    def take_back(self) -> None:
        """Speculate again with the drafter auto dropped live: kept as a hand pick, which auto leaves alone."""
        selection = self.selection
        if selection is None:  # nothing was measured, so nothing was dropped
            return
        self.drafter, self.auto, self.switched = selection.drafter, selection.auto_gamma(), None
        self.draft_spec = selection.spec
        self.pair_changed.emit()

    def set_static(self, decoder: StaticDecoder | None) -> None:
        self.static = decoder

    def set_tree_mode(self, mode: str) -> None:
        if mode not in TREE_MODES:
            raise ValueError(f"token trees are 'auto', 'on' or 'off', not {mode!r}")
        if mode != self.tree_mode:
            self.tree_mode = mode
            self.tree_mode_changed.emit(mode)

    @property
    def tree(self) -> bool | None:
        """The tree mode as the selection takes it (app.drafting.auto.select's `tree`)."""
        return TREE_MODES[self.tree_mode]

    def gamma_max(self, hand_gamma: int | None) -> int:
        """The largest γ a round can ask for: with γ on auto (hand_gamma None), the live controller's range
        (or the start value without one); else the hand-set γ. The compiled steps are warmed up to it and
        the step-through's panels sized by it, so a later, larger γ never compiles mid-answer."""
        if hand_gamma is not None:
            return hand_gamma
        return self.auto.gamma_max if self.auto is not None else AUTO_GAMMA_START

