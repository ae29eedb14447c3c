"""The records the history store reads and writes; plain frozen data, no database handles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .palette import STATUSES

if TYPE_CHECKING:
    from app.engine import TokenEvent

ROLES = ("system", "user", "assistant")

Ranked = tuple[tuple[int, float], ...]  # (token id, probability), largest first


@dataclass(frozen=True, slots=True)
class StoredTop:
    """app.engine.TopEntries as stored: same fields, so one tooltip renders either.

    A separate class keeps the history package free of the engine's torch import.
    """

    p: Ranked
    q: Ranked
    residual: Ranked


@dataclass(frozen=True, slots=True)
class StoredToken:
    """One emitted or rejected token, as rendered."""

    token_id: int
    text: str
    status: str  # one of palette.STATUSES
    round: int
    p: float
    q: float | None
    accept_prob: float | None
    top: StoredTop | None = None  # only on corrected tokens

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"Unknown token status {self.status!r}; expected one of {', '.join(STATUSES)}.")

    @classmethod
    def from_event(cls, ev: TokenEvent) -> StoredToken:
        top = None
        if ev.top is not None:
            top = StoredTop(tuple(ev.top.p), tuple(ev.top.q), tuple(ev.top.residual))
        return cls(ev.token_id, ev.text, str(ev.status), ev.round, ev.p, ev.q, ev.accept_prob, top)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One turn. `stats` is JSON data; the keys the exports read are

    new_tokens, seconds, alpha, gamma, histogram (rounds by accepted drafts, index 0..gamma),
    rounds (per-round [drafted, accepted, emitted, bonus] lists), target and draft (model names);
    anything else is kept and ignored.
    """

    id: int
    conversation_id: int
    role: str  # one of ROLES
    content: str
    tokens: tuple[StoredToken, ...]
    stats: dict
    partial: bool  # True when the answer was interrupted by Stop
    created: float  # unix time


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: int
    title: str
    system_prompt: str
    created: float
    updated: float  # last change to the messages or the system prompt
    message_count: int
