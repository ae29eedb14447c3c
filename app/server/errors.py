"""Errors in OpenAI's shape: {"error": {"message", "type", "param", "code"}}, with the HTTP status."""

from __future__ import annotations

from starlette.responses import JSONResponse

INVALID = "invalid_request_error"


class ApiError(Exception):
    """Raised anywhere a request is refused; the routes turn it into its JSON response."""

    def __init__(self, status: int, message: str, *, type: str = INVALID, param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)
