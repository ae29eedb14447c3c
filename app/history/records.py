"""The records the history store reads and writes; plain frozen data, no database handles."""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.events import TokenEvent, TopEntries

from .palette import STATUSES

ROLES = ("system", "user", "assistant")

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
    top: TopEntries | None = None  # only on corrected tokens
    node: int | None = None  # tree rounds: the tree node a draft token came from (not kept in the history file)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"Unknown token status {self.status!r}; expected one of {', '.join(STATUSES)}.")

    @classmethod
    def from_event(cls, ev: TokenEvent) -> StoredToken:
        return cls(ev.token_id, ev.text, str(ev.status), ev.round, ev.p, ev.q, ev.accept_prob, ev.top, ev.node)


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
