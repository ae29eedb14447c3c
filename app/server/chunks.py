"""OpenAI's response and stream shapes, built from an answer's Steps and Done, with the `speclens` fields.

Per choice (and per stream chunk): `speclens.tokens`, every token of the round with its fate:
{id, text, status (accepted, corrected, bonus, target, or rejected for a refused draft), round, p, q}.
The emitted tokens' texts concatenate to the content. In the usage: `speclens` from usage.speclens_usage.
"""

from __future__ import annotations

import json

from app.engine import TokenEvent

from .errors import ApiError
from .host import Answer, Done, Step

CHAT, COMPLETION = "chat", "completion"


def token_json(t: TokenEvent) -> dict:
    return {"id": t.token_id, "text": t.text, "status": t.status.value, "round": t.round, "p": t.p, "q": t.q}


def _tokens(events) -> list[dict]:
    return [token_json(e) for e in events if isinstance(e, TokenEvent)]


def usage_json(done: Done) -> dict:
    return {
        "prompt_tokens": done.prompt_tokens,
        "completion_tokens": done.completion_tokens,
        "total_tokens": done.prompt_tokens + done.completion_tokens,
        "speclens": done.usage,
    }


def _head(kind: str, answer: Answer, model: str, stream: bool) -> dict:
    if kind == CHAT:
        return {"id": f"chatcmpl-{answer.id}", "object": "chat.completion.chunk" if stream else "chat.completion",
                "created": int(answer.created), "model": model}
    return {"id": f"cmpl-{answer.id}", "object": "text_completion", "created": int(answer.created), "model": model}


def response(kind: str, answer: Answer, model: str, steps: list[Step], done: Done) -> dict:
    """The whole answer, for a request without `stream`."""
    tokens = [t for step in steps for t in _tokens(step.events)]
    choice: dict = {"index": 0, "finish_reason": done.finish_reason, "logprobs": None, "speclens": {"tokens": tokens}}
    if kind == CHAT:
        choice["message"] = {"role": "assistant", "content": done.text}
    else:
        choice["text"] = done.text
    return _head(kind, answer, model, False) | {"choices": [choice], "usage": usage_json(done)}


class StreamWriter:
    """Server-sent events for one streamed answer: `data: {chunk}` lines, then `data: [DONE]`."""

    def __init__(self, kind: str, answer: Answer, model: str, include_usage: bool) -> None:
        self.kind, self.answer, self.model, self.include_usage = kind, answer, model, include_usage

    def _chunk(self, choice: dict | None, usage: dict | None = None) -> bytes:
        chunk = _head(self.kind, self.answer, self.model, True) | {"choices": [choice] if choice else []}
        if self.include_usage:
            chunk["usage"] = usage
        return _event(chunk)

    def _choice(self, text: str, finish_reason: str | None, tokens: list[dict] | None = None,
                role: bool = False) -> dict:
        choice: dict = {"index": 0, "finish_reason": finish_reason, "logprobs": None}
        if self.kind == CHAT:
            choice["delta"] = ({"role": "assistant"} if role else {}) | ({"content": text} if text or role else {})
        else:
            choice["text"] = text
        if tokens is not None:
            choice["speclens"] = {"tokens": tokens}
        return choice

    def start(self) -> bytes:
        """The first chunk (chat: the assistant role), sent as soon as the answer is queued."""
        return self._chunk(self._choice("", None, role=True)) if self.kind == CHAT else b""

    def step(self, step: Step) -> bytes:
        return self._chunk(self._choice(step.text, None, _tokens(step.events)))

    def done(self, done: Done) -> bytes:
        if done.error is not None:
            error = ApiError(500, f"the engine failed: {done.error}", type="server_error", code="engine_error")
            return _event(error.body()) + b"data: [DONE]\n\n"
        out = self._chunk(self._choice(done.tail, None, [])) if done.tail else b""
        out += self._chunk(self._choice("", done.finish_reason))
        if self.include_usage:
            out += self._chunk(None, usage_json(done))
        return out + b"data: [DONE]\n\n"


def _event(payload: dict) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
