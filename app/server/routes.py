"""The HTTP endpoints: POST /v1/chat/completions and /v1/completions (streamed or not), GET /v1/models, /health.

Every refusal is an ApiError in OpenAI's shape, and the server keeps serving after it. A streamed
answer whose client goes away is cancelled: Starlette ends the response on the disconnect, and the
stream's `finally` sets the answer's cancel flag, which the engine reads before its next round.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.engine import DecodeParams

from .auth import authorize
from .body import MAX_BODY, read_body
from .chunks import CHAT, StreamWriter, response
from .errors import ApiError
from .host import Done, EngineHost, HostClosed, Job, QueueFull, Step
from .schema import ApiRequest, parse_chat, parse_completion

DISCONNECT_POLL_S = 0.25  # how often a request that is not streamed checks that its client is still there


def create_app(host: EngineHost, *, api_key: str | None = None, max_body: int = MAX_BODY) -> Starlette:
    created = int(time.time())

    async def chat(request: Request) -> Response:
        authorize(request.headers.get("authorization"), api_key)
        return await _answer(request, host, parse_chat(await read_body(request, max_body)))

    async def completions(request: Request) -> Response:
        authorize(request.headers.get("authorization"), api_key)
        return await _answer(request, host, parse_completion(await read_body(request, max_body)))

    async def models(request: Request) -> Response:
        authorize(request.headers.get("authorization"), api_key)
        return JSONResponse({"object": "list", "data": [_model_json(host, created)]})

    async def health(_request: Request) -> Response:
        running = host.running
        return JSONResponse({
            "status": "ok", "model": host.pair.model_id, "draft": host.pair.draft_name,
            "queue": {"running": running is not None, "waiting": host.waiting, "max_waiting": host.max_waiting},
            "served": host.served,
        })

    async def api_error(_request: Request, exc: ApiError) -> Response:
        return exc.response()

    async def http_error(_request: Request, exc: HTTPException) -> Response:
        kind = "not_found" if exc.status_code == 404 else "method_not_allowed" if exc.status_code == 405 else None
        return ApiError(exc.status_code, str(exc.detail), code=kind, headers=dict(exc.headers or {})).response()

    async def server_error(_request: Request, exc: Exception) -> Response:
        message = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0]
        return ApiError(500, message, type="server_error").response()

    # Starlette types each handler as taking any Exception; each of these takes the kind it is registered for.
    handlers: dict[Any, Any] = {ApiError: api_error, HTTPException: http_error, Exception: server_error}
    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ],
        exception_handlers=handlers,
    )


def _model_json(host: EngineHost, created: int) -> dict:
    pair = host.pair
    gamma = "auto" if pair.auto is not None else pair.params.gamma
    return {"id": pair.model_id, "object": "model", "created": created, "owned_by": "speclens",
            "speclens": {"draft": pair.draft_name, "gamma": gamma, "context": host.context_limit}}


def job_for(host: EngineHost, req: ApiRequest) -> Job:
    """The engine job a validated request asks for; ApiError where it does not fit this server."""
    pair = host.pair
    if req.model not in (pair.model_id, pair.target.spec):
        raise ApiError(404, f"model {req.model!r} is not served here; this server serves {pair.model_id!r} "
                       "(GET /v1/models)", param="model", code="model_not_found")
    if req.draft not in (None, pair.draft_name, "none"):
        raise ApiError(400, f"speclens.draft: {req.draft!r} is not loaded; use {pair.draft_name!r} or 'none' "
                       "(target-only)", param="speclens.draft", code="invalid_value")
    try:
        input_ids = host.encode_chat(list(req.messages)) if req.kind == CHAT else host.encode_text(req.prompt or "")
    except Exception as exc:  # a chat template may refuse some turn orders
        raise ApiError(400, f"the model's chat template refused the messages: {exc}".splitlines()[0],
                       param="messages", code="invalid_value") from None
    limit, prompt = host.context_limit, len(input_ids)
    if limit is not None and prompt >= limit:
        raise ApiError(400, f"the prompt takes {prompt} tokens and this model's context holds {limit}: shorten it",
                       param="messages" if req.kind == CHAT else "prompt", code="context_length_exceeded")
    if limit is not None and req.max_tokens is not None and prompt + req.max_tokens > limit:
        raise ApiError(400, f"max_tokens {req.max_tokens} does not fit: the context holds {limit} tokens and the "
                       f"prompt takes {prompt}, so at most {limit - prompt}",
                       param="max_tokens", code="context_length_exceeded")
    base = pair.params
    try:
        params = DecodeParams(
            gamma=req.gamma if req.gamma is not None else base.gamma,
            temperature=base.temperature if req.temperature is None else req.temperature,
            top_k=base.top_k if req.top_k is None else req.top_k,
            top_p=base.top_p if req.top_p is None else req.top_p,
            max_new_tokens=base.max_new_tokens if req.max_tokens is None else req.max_tokens,
            seed=base.seed if req.seed is None else req.seed,
        )
    except ValueError as exc:
        raise ApiError(400, str(exc), code="invalid_value") from None
    return Job(input_ids, params, auto_gamma=req.gamma is None and pair.auto is not None,
               target_only=req.draft == "none", stop=req.stop,
               messages=req.messages or ({"role": "user", "content": req.prompt or ""},))


async def _answer(request: Request, host: EngineHost, req: ApiRequest) -> Response:
    job = job_for(host, req)
    loop = asyncio.get_running_loop()
    items: asyncio.Queue[Step | Done] = asyncio.Queue()
    def deliver(item: Step | Done) -> None:  # in the engine's thread: into this request's loop
        loop.call_soon_threadsafe(items.put_nowait, item)

    try:
        answer = host.submit(job, deliver)
    except QueueFull as exc:
        raise ApiError(429, str(exc), type="rate_limit_error", code="rate_limit_exceeded",
                       headers={"Retry-After": str(exc.retry_after)}) from None
    except HostClosed:
        raise _shutting_down() from None
    model = host.pair.model_id
    if req.stream:
        writer = StreamWriter(req.kind, answer, model, req.include_usage)

        async def events():
            try:
                first = writer.start()
                if first:
                    yield first
                while True:
                    item = await items.get()
                    if isinstance(item, Step):
                        yield writer.step(item)
                    else:
                        yield writer.done(item)
                        return
            finally:  # normal end, or the client went away (Starlette cancels this generator)
                if answer.done is None:
                    answer.cancel()

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    steps: list[Step] = []
    try:
        while True:
            try:
                item = await asyncio.wait_for(items.get(), DISCONNECT_POLL_S)
            except TimeoutError:
                if await request.is_disconnected():
                    answer.cancel()
                    return Response(status_code=499)  # nobody reads it
                continue
            if isinstance(item, Step):
                steps.append(item)
                continue
            break
    finally:
        if answer.done is None:
            answer.cancel()
    done: Done = item
    if done.error is not None:
        raise ApiError(500, f"the engine failed: {done.error}", type="server_error", code="engine_error")
    if done.finish_reason == "cancelled":  # only the host's close cancels an answer whose client is still there
        raise _shutting_down()
    return JSONResponse(response(req.kind, answer, model, steps, done))


def _shutting_down() -> ApiError:
    return ApiError(503, "the server is shutting down", type="server_error", code="shutting_down")
