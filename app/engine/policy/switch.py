"""The switch rule: after an answer, whether auto keeps its draft or goes target-only for the rest of the chat."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocols import LiveController

RECHECK_ROUNDS = 12  # live rounds before the load-time choice is second-guessed
MEASURED_FLOOR = 0.9  # an answer measured this much slower than target-only ends auto's draft at once
MEASURED_TOKENS = 16  # ... when it had at least this many tokens (shorter ones are mostly prefill)


@dataclass(frozen=True, slots=True)
class Switch:
    """Why auto drops its draft after live rounds, as data (app.drafting.reasons words it in English)."""

    kind: str  # "measured": the last answer ran slower than target-only; "predicted": live α and c say so
    speedup: float  # the measured speedup, or the live prediction, that made the switch
    label: str  # the drafter, for people
    alpha1: float = 0.0  # "predicted": the live acceptance at draft position 1
    c: float = 0.0  # "predicted": the live draft cost in target steps


def recheck(live: LiveController, measured: float | None, new_tokens: int) -> Switch | None:
    """After an answer with draft 'auto': target-only from now on when the answer measured clearly slower
    than target-only steps timed at the same context (and was long enough to judge), or when after
    RECHECK_ROUNDS live rounds the live α, c and verify cost predict the draft slower (the load-time probe
    was optimistic). None: keep the draft. measured: the answer's measured speedup, None when untimed."""
    if measured is not None and measured < MEASURED_FLOOR and new_tokens >= MEASURED_TOKENS:
        return Switch("measured", measured, live.label)
    if live.rounds >= RECHECK_ROUNDS and live.predicted < 1.0:
        p = live.profile
        return Switch("predicted", live.predicted, p.label, p.alpha_at(1), p.c)
    return None
