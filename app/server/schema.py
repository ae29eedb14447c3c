"""The OpenAI request bodies SpecLens accepts, validated into plain requests; everything else is an ApiError.

Standard fields: model, messages (chat) or prompt (completions), temperature, top_p, max_tokens
(max_completion_tokens for chat), stop, seed, n = 1, stream, stream_options.include_usage; top_k as vLLM
and llama.cpp accept it. The extension `speclens: {gamma, draft}` sits beside them, where standard
clients never look. Fields that would change the distribution SpecLens cannot honour (penalties, logit
bias, tools, logprobs) are refused, never ignored: an exact engine must not quietly sample another rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from app.engine.params import GAMMA_LIMIT

from .errors import ApiError

MAX_STOPS = 4  # as OpenAI
# Accepted only at their neutral value: anything else asks for a sampling rule this engine does not run.
NEUTRAL: dict[str, tuple[object, ...]] = {"frequency_penalty": (None, 0, 0.0), "presence_penalty": (None, 0, 0.0), "logit_bias": (None, {}),
           "logprobs": (None, False), "top_logprobs": (None, 0), "tools": (None, []), "tool_choice": (None, "none"),
           "functions": (None, []), "response_format": (None, {"type": "text"}), "echo": (None, False),
           "suffix": (None, ""), "best_of": (None, 1)}


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class TextPart(_Strict):
    type: Literal["text"]
    text: str


class Message(_Strict):
    # "developer" is OpenAI's newer name for a system message.
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]

    def text(self) -> str:
        return self.content if isinstance(self.content, str) else "".join(p.text for p in self.content)


class StreamOptions(_Strict):
    include_usage: bool = False


class Extension(_Strict):
    model_config = ConfigDict(strict=True, extra="forbid")
    gamma: int | None = Field(None, ge=1, le=GAMMA_LIMIT)  # a fixed draft length; absent: the server's (auto) γ
    draft: str | None = None  # "none" for target-only; absent or the served draft's name: the served draft


class _Body(_Strict):
    model_config = ConfigDict(strict=True, extra="allow")
    model: str
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    top_k: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    speclens: Extension | None = None


class _ChatBody(_Body):
    messages: list[Message] = Field(min_length=1)
    max_completion_tokens: int | None = Field(None, ge=1)


class _CompletionBody(_Body):
    prompt: str | list[str]


@dataclass(frozen=True)
class ApiRequest:
    """A validated request: chat `messages` or a completion `prompt`, with the sampling it asks for.

    None means "the server's default" for every optional field.
    """

    kind: Literal["chat", "completion"]
    model: str
    messages: tuple[dict[str, str], ...]  # {"role", "content"} for the chat template; empty for completions
    prompt: str | None
    temperature: float | None
    top_p: float | None
    top_k: int | None
    max_tokens: int | None
    stop: tuple[str, ...]
    seed: int | None
    stream: bool
    include_usage: bool
    gamma: int | None
    draft: str | None


def parse_chat(raw: bytes) -> ApiRequest:
    body = _validate(_ChatBody, raw)
    messages = tuple(
        {"role": "system" if m.role == "developer" else m.role, "content": m.text()} for m in body.messages
    )
    max_tokens = body.max_completion_tokens if body.max_completion_tokens is not None else body.max_tokens
    return _request(body, "chat", messages, None, max_tokens)


def parse_completion(raw: bytes) -> ApiRequest:
    body = _validate(_CompletionBody, raw)
    prompt = body.prompt
    if isinstance(prompt, list):
        if len(prompt) != 1:
            raise ApiError(400, f"prompt: one prompt per request (n = 1), got a list of {len(prompt)}",
                           param="prompt", code="invalid_value")
        prompt = prompt[0]
    if not prompt:
        raise ApiError(400, "prompt: the prompt is empty", param="prompt", code="invalid_value")
    return _request(body, "completion", (), prompt, body.max_tokens)


def _request(body: _Body, kind, messages, prompt, max_tokens) -> ApiRequest:
    if body.n not in (None, 1):
        raise ApiError(400, f"n: SpecLens answers one choice per request (n = 1), got {body.n}", param="n",
                       code="invalid_value")
    extra = body.model_extra or {}
    for name, neutral in NEUTRAL.items():
        if name in extra and extra[name] not in neutral:
            raise ApiError(400, f"{name}: not supported by SpecLens (its exact sampling has no such option)",
                           param=name, code="unsupported_parameter")
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    if len(stop) > MAX_STOPS:
        raise ApiError(400, f"stop: at most {MAX_STOPS} stop sequences, got {len(stop)}", param="stop",
                       code="invalid_value")
    if any(not s for s in stop):
        raise ApiError(400, "stop: a stop sequence is empty", param="stop", code="invalid_value")
    ext = body.speclens or Extension()
    return ApiRequest(
        kind=kind, model=body.model, messages=messages, prompt=prompt, temperature=body.temperature,
        top_p=body.top_p, top_k=body.top_k, max_tokens=max_tokens, stop=stop, seed=body.seed, stream=body.stream,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        gamma=ext.gamma, draft=ext.draft,
    )


def _validate(model: type[BaseModel], raw: bytes):
    try:
        return model.model_validate_json(raw)
    except ValidationError as exc:
        raise _as_api_error(exc) from None


def _as_api_error(exc: ValidationError) -> ApiError:
    """The first problem, as one line naming the field (param is its dotted path, as OpenAI writes it)."""
    err = exc.errors(include_url=False)[0]
    if err["type"] == "json_invalid":
        return ApiError(400, f"the body is not valid JSON ({err['msg'].removeprefix('Invalid JSON: ')})",
                        code="invalid_json")
    if not err["loc"]:  # valid JSON, but not an object
        return ApiError(400, "the body must be a JSON object", code="invalid_json")
    # Union members add their type name to the path (messages.0.content.str); keep the field's path.
    loc = [str(part) for part in err["loc"] if not (isinstance(part, str) and part in _UNION_TAGS)]
    param = ".".join(loc)
    if err["type"] == "missing":
        return ApiError(400, f"{param}: a required field is missing", param=param, code="missing_required_parameter")
    if param == "messages" and err["type"] == "too_short":
        return ApiError(400, "messages: the message list is empty; send at least one message", param=param,
                        code="invalid_value")
    got = err.get("input")
    shown = repr(got) if isinstance(got, str | int | float | bool) or got is None else type(got).__name__
    return ApiError(400, f"{param}: {err['msg'][0].lower()}{err['msg'][1:]} (got {shown})", param=param,
                    code="invalid_type" if err["type"].endswith("_type") else "invalid_value")


_UNION_TAGS = {"str", "list[str]", "list[TextPart]", "int", "float", "bool", "none"}
