"""Conversation: the open chat of a front end without Qt: its messages, its id in the history, its system
prompt and the answer streaming into it, with observers.

The window's ChatView renders one and never owns the messages; the flows change it. An answer streams the
same way whatever its source (AnswerSource: the engine live, a recording replayed, a request through the
local server): begin_answer adds it, append_tokens grows it as the tokens arrive with their fates, and
end_answer closes it, finished or partial. Observers hear every change in the thread that made it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.history.records import StoredToken

from .observers import Observers

LIVE, REPLAY, API = "live", "replay", "api"  # where an answer streams from


@dataclass
class Message:
    role: str  # "user" | "assistant"
    content: str = ""  # user text; for answers, the emitted tokens' text once complete
    tokens: list[StoredToken] = field(default_factory=list)  # emitted and rejected, in engine order
    stats: dict = field(default_factory=dict)
    partial: bool = False
    db_id: int | None = None
    streaming: bool = False  # an answer still arriving: no footer until it ends

    @property
    def text(self) -> str:
        if self.role != "assistant":
            return self.content
        return "".join(t.text for t in self.tokens if t.status != "rejected")


@dataclass(frozen=True)
class AnswerSource:
    """Where an answer comes from and what it is decoded with; begin_answer takes one for every source."""

    kind: str  # LIVE (decoded now), REPLAY (a recording played back) or API (a request through the server)
    target: str  # the answer's header: the target, as the answer names it
    draft: str  # and its drafter
    params: Callable[[], Any]  # what it is decoded with (DecodeParams or alike), read when the answer ends
    cancel: threading.Event = field(default_factory=threading.Event)  # Stop sets it
    turns: list[dict] | None = None  # recorded with the answer when given (a replay is a recording already)
    baseline: float | None = None  # target-only seconds per step, when known before the answer starts

    @property
    def decoding(self) -> bool:
        """The engine decodes it now (live or served), rather than a recording playing it back."""
        return self.kind != REPLAY

    def header(self) -> dict:
        """The stats an answer starts with: who answers (a served answer says it came through the API)."""
        return {"target": self.target, "draft": self.draft} | ({"source": API} if self.kind == API else {})


@dataclass(frozen=True)
class Answer:
    """The answer streaming: its message's index and its source."""

    index: int
    source: AnswerSource


class Conversation:
    def __init__(self) -> None:
        self.conv_id: int | None = None  # its id in the history store; None until saved (or when not saved)
        self.system_prompt = ""
        self.messages: list[Message] = []
        self.answer: Answer | None = None  # the answer streaming, if one is
        self.replaced = Observers()  # (): the messages were replaced (another chat, or some dropped)
        self.opened = Observers()  # (): another conversation is shown (a new chat, or one from the history)
        self.message_added = Observers()  # (index)
        self.tokens_added = Observers()  # (index, tokens): tokens streamed onto the last message
        self.answer_ended = Observers()  # (index): its footer (statistics, actions) is due
        self.system_prompt_changed = Observers()  # (text)

    # --- which conversation ----------------------------------------------------------------------
    def open(self, conv_id: int | None = None, system_prompt: str = "", messages: list[Message] | None = None) -> None:
        """Show another conversation: a new, empty chat by default. Not while an answer streams."""
        self._not_answering()
        self.conv_id = conv_id
        self.set_system_prompt(system_prompt)
        self.messages = list(messages or [])
        self.replaced.emit()
        self.opened.emit()

    def set_system_prompt(self, text: str) -> None:
        if text != self.system_prompt:
            self.system_prompt = text
            self.system_prompt_changed.emit(text)

    def turns(self) -> list[dict]:
        """The chat as a chat template takes it: the system prompt (when there is one), then every turn."""
        system = self.system_prompt.strip()
        return ([{"role": "system", "content": system}] if system else []) + [
            {"role": m.role, "content": m.text} for m in self.messages]

    def last_user_text(self) -> str:
        return next((m.content for m in reversed(self.messages) if m.role == "user"), "")

    # --- messages --------------------------------------------------------------------------------
    def add(self, message: Message) -> int:
        self.messages.append(message)
        index = len(self.messages) - 1
        self.message_added.emit(index)
        return index

    def truncate(self, index: int) -> list[Message]:
        """Drop message `index` and everything after it; the dropped ones. Not while an answer streams."""
        self._not_answering()
        dropped, self.messages = self.messages[index:], self.messages[:index]
        self.replaced.emit()
        return dropped

    def append_tokens(self, index: int, tokens: list[StoredToken]) -> None:
        """Stream tokens onto message `index`, the last one."""
        self.messages[index].tokens.extend(tokens)
        self.tokens_added.emit(index, tokens)

    # --- the streaming answer --------------------------------------------------------------------
    @property
    def answering(self) -> bool:
        return self.answer is not None

    def begin_answer(self, source: AnswerSource) -> Answer:
        """An empty answer from `source`, streaming from now on: the one start of every answer."""
        self._not_answering()
        self.answer = Answer(len(self.messages), source)
        self.add(Message("assistant", stats=source.header(), streaming=True))
        return self.answer

    def end_answer(self, partial: bool, stats: dict, db_id: int | None = None) -> Message:
        """The streaming answer ends (partial: stopped, failed or cut short), with its statistics and its id in
        the store; it keeps the text its emitted tokens make."""
        answer, self.answer = self.answer, None
        if answer is None:
            raise RuntimeError("no answer is streaming")
        message = self.messages[answer.index]
        message.partial, message.content, message.db_id = partial, message.text, db_id
        message.stats.update(stats)
        message.streaming = False
        self.answer_ended.emit(answer.index)
        return message

    def _not_answering(self) -> None:
        if self.answer is not None:
            raise RuntimeError("an answer is streaming into this conversation")
