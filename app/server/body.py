"""Reading a request body with a size bound: a body past it is refused (413) before it is read whole."""

from __future__ import annotations

from starlette.requests import Request

from .errors import ApiError

MAX_BODY = 4 * 2**20  # bytes; a chat far longer than any context this engine runs


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:  # chunked, or a Content-Length that lied
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, f"the request body is larger than {limit // 2**20} MiB", code="request_too_large")
