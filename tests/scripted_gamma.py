"""A live controller whose γ follows a script, round by round: what a front end does with a controller's
γ (run each round at it, record it) can then be checked exactly, whatever the machine's timings. The
real controllers (app/engine/policy) are tested against their rules in tests/engine/test_policy.py."""

from __future__ import annotations

from app.engine.events import RoundEvent
from app.engine.policy import DrafterProfile


class ScriptedGamma:
    """protocols.LiveController: γ for round k is script[k] (the last one after the script ends)."""

    name, label = "scripted", "scripted γ"

    def __init__(self, script: list[int]) -> None:
        self.script = script
        self.gamma_max = max(script)
        self.rounds = 0  # rounds observed: the next round's index
        self.steps: list[float] = []  # target-only steps told

    def observe(self, r: RoundEvent) -> None:
        self.rounds += 1

    def observe_step(self, seconds: float) -> None:
        self.steps.append(seconds)

    def gamma(self) -> int:
        return self.script[min(self.rounds, len(self.script) - 1)]

    @property
    def predicted(self) -> float:
        return 1.0

    @property
    def tokens_per_round(self) -> float:
        return 1.0

    @property
    def profile(self) -> DrafterProfile:
        return DrafterProfile(self.name, self.label, 0.1, 0.5)
