"""Live rounds against the machine profile: when they disagree, the profile is measured again. No Qt.

The profile's step and v(n) were timed at load; a machine that got busy since (or was busy then, and is
quiet now) runs every round at another speed than they say, and the drafter, γ and thread count chosen
from them may no longer be the fastest. Each round's verify time is set against what the profile
predicts for it: the real loop's target-only step (baseline.py, which includes what a round adds to the
bare pass) times v(n) for a chain pass over n tokens, v_tree(n) for a tree pass. When the median of
those ratios over the last ROUNDS rounds is off by more than TOLERANCE, either way, the profile is
disputed: its cache entry says so, and the next load measures every part again (machine_profile.py).

A profile timed on a busy machine gives no verdict: it is measured again at the next quiet load anyway
(machine_profile.py), and disputing it while the machine stays busy would only time it, as noisily,
again at every launch.

Rounds count only where the profile speaks for them: the first round (it carries the prompt's prefill)
is skipped, and so are rounds at more than CONTEXT_SPAN times the probe's context when the caller gives
the context (attention grows with it, so a long chat runs slower on an unchanged machine). Feed rounds
of the dynamic cache, which the profile timed, not compiled or static steps.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, replace

from app.engine.events import RoundEvent
from app.machine import profile as machine_profile
from app.machine.profile import MachineProfile

ROUNDS = 32  # rounds whose median decides: a few dozen, so one slow round (a page fault, a GC) cannot
TOLERANCE = 0.30  # live/profile off by more than this (either way) disputes the profile
CONTEXT_SPAN = 2.0  # rounds at more than this many times the probe's context are not compared


@dataclass(frozen=True)
class Disagreement:
    ratio: float  # median live seconds / the profile's, over `rounds` rounds
    rounds: int

    @property
    def text(self) -> str:
        way = "slower" if self.ratio > 1 else "faster"
        return (f"live rounds ran {abs(self.ratio - 1) * 100:.0f}% {way} than this machine's profile "
                f"(median of {self.rounds} rounds)")


class LiveCheck:
    """observe() every round of an answer; `disagreement` says when the profile no longer holds."""

    def __init__(self, profile: MachineProfile, *, rounds: int = ROUNDS, tolerance: float = TOLERANCE) -> None:
        if profile.verify is None:
            raise ValueError("the profile has no step timed yet: calibrate the pair first")
        self.profile = profile
        self.verify = profile.verify  # what the rounds are held against
        self.rounds = rounds
        self.tolerance = tolerance
        self.ratios: deque[float] = deque(maxlen=rounds)
        self.settled = False  # its verdict was given: one per loaded profile

    @classmethod
    def of(cls, target) -> LiveCheck | None:
        """The check of a loaded target (app.models.LoadedModel) whose profile has its step timed (a drafter
        selection ran); else None."""
        profile = target.profile
        return cls(profile) if profile is not None and profile.verify is not None else None

    def expected(self, tokens: int, tree: bool = False) -> float:
        """Seconds the profile predicts for a round whose target pass takes `tokens` tokens."""
        v = self.verify
        steps = v.costs.v_tree(tokens) if tree else v.costs.v(tokens)
        return (v.loop_step or v.costs.step) * steps

    def observe(self, r: RoundEvent, context: int | None = None) -> None:
        """A round of the running answer; context: the tokens before it, when the caller knows them."""
        if r.round == 0 or r.verify_time <= 0:
            return
        if context is not None and context > CONTEXT_SPAN * max(1, self.verify.context):
            return
        tree = bool(r.tree_tokens)
        self.ratios.append(r.verify_time / self.expected(r.tree_nodes + 1 if tree else r.drafted + 1, tree))

    @property
    def disagreement(self) -> Disagreement | None:
        load = self.verify.load
        if len(self.ratios) < self.rounds or (load is not None and load.busy):
            return None
        ratio = statistics.median(self.ratios)
        return Disagreement(ratio, len(self.ratios)) if abs(ratio - 1) > self.tolerance else None

    def verdict(self) -> Disagreement | None:
        """After an answer: the disagreement, once. The cached profile is then marked disputed (`profile`
        becomes that), so the next load of this model measures it all again; later calls say nothing."""
        why = None if self.settled else self.disagreement
        if why is not None:
            self.profile = dispute(self.profile, why)
            self.settled = True
        return why


def dispute(profile: MachineProfile, why: Disagreement) -> MachineProfile:
    """Mark the cached profile disputed, so the next load of this model measures it all again."""
    disputed = replace(profile, disputed=why.text)
    machine_profile.write(disputed)
    return disputed
