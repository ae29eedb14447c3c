"""Run the decoding generator to completion and keep what it said: the library entry point."""

from __future__ import annotations

from dataclasses import dataclass, field

from .decoding import decode
from .events import FinishedEvent, RoundEvent, Status, TokenEvent
from .sampling import DecodeParams
from .stats import Summary, summarize


@dataclass
class Result:
    tokens: list[TokenEvent] = field(default_factory=list)  # emitted tokens, in order
    rejected: list[TokenEvent] = field(default_factory=list)
    rounds: list[RoundEvent] = field(default_factory=list)
    finished: FinishedEvent | None = None

    @property
    def token_ids(self) -> list[int]:
        return [t.token_id for t in self.tokens]

    @property
    def statuses(self) -> list[Status]:
        return [t.status for t in self.tokens]

    @property
    def text(self) -> str:
        return "".join(t.text for t in self.tokens)

    def summary(self, gamma: int) -> Summary:
        return summarize(self.rounds, gamma)

    def add(self, event) -> None:
        if isinstance(event, TokenEvent):
            (self.tokens if event.emitted else self.rejected).append(event)
        elif isinstance(event, RoundEvent):
            self.rounds.append(event)
        elif isinstance(event, FinishedEvent):
            self.finished = event


def generate(target, input_ids, drafter=None, params=DecodeParams(), **kwargs) -> Result:
    """Blocking form of `decode`: same arguments, returns a Result."""
    result = Result()
    for event in decode(target, input_ids, drafter, params, **kwargs):
        result.add(event)
    return result
