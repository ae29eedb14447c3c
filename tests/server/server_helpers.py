"""Shared by the server tests: a real server on 127.0.0.1 (an ephemeral port) over a loaded pair, the official
openai client for it, and checks of the extension fields against the answer they describe."""

from __future__ import annotations

from contextlib import contextmanager

from app.engine import DecodeParams

TIMEOUT_S = 60  # every client call; no test waits unbounded


@contextmanager
def serving(target, drafter, params: DecodeParams, *, max_waiting: int = 4, api_key: str | None = None,
            auto=None, observers=()):
    """(server, host) running until the block ends; the test's own server, stopped by the test."""
    from app.server.host import EngineHost, ServedPair
    from app.server.server import LocalServer

    host = EngineHost(ServedPair(target, drafter, params, auto), max_waiting=max_waiting)
    for observer in observers:
        host.subscribe(observer)
    host.start()
    server = LocalServer(host, address="127.0.0.1", port=0, api_key=api_key)
    try:
        server.start()
        yield server, host
    finally:
        server.stop()
        host.close()


def client(server, api_key: str = "unused"):
    import openai

    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=api_key, max_retries=0, timeout=TIMEOUT_S)


EMITTED = {"accepted", "corrected", "bonus", "target"}


def check_tokens(content: str, tokens: list[dict], usage: dict | None = None) -> list[dict]:
    """The `speclens.tokens` of an answer describe exactly its content; returns the emitted tokens."""
    assert {t["status"] for t in tokens} <= EMITTED | {"rejected"}
    emitted = [t for t in tokens if t["status"] != "rejected"]
    assert "".join(t["text"] for t in emitted) == content
    rounds = [t["round"] for t in tokens]
    assert rounds == sorted(rounds)
    for t in tokens:
        assert isinstance(t["id"], int) and 0.0 <= t["p"] <= 1.0
        drafted = t["status"] in ("accepted", "rejected")
        assert (t["q"] is not None) == drafted, t
        if drafted:
            assert 0.0 < t["q"] <= 1.0
    if usage is not None:
        s = usage["speclens"]
        assert usage["completion_tokens"] == len(emitted)
        assert s["rounds"] == (rounds[-1] + 1 if rounds else 0)
        assert s["rounds"] == len(set(rounds))  # every round emits at least one token
        drafted_rounds = {t["round"] for t in tokens if t["status"] in ("accepted", "rejected", "bonus")}
        accepted = sum(t["status"] == "accepted" for t in tokens)
        if drafted_rounds:
            assert abs(s["mean_accepted"] - accepted / len(drafted_rounds)) < 1e-9
            assert 0.0 <= s["alpha"] <= 1.0
            assert sum(s["histogram"]) == len(drafted_rounds)
        else:
            assert s["mean_accepted"] is None and s["alpha"] is None
    return emitted


def read_stream(stream, per_chunk: bool = True) -> tuple[str, list[dict], str | None, dict | None]:
    """(content, tokens, finish_reason, usage) of a streamed chat answer from the openai client; per_chunk:
    check each chunk's tokens against that chunk's text (text held back for a stop sequence moves later)."""
    content, tokens, finish, usage = [], [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage.model_dump()
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        text = choice.delta.content or ""
        ext = (choice.model_extra or {}).get("speclens")
        if ext is not None and per_chunk:
            emitted = [t for t in ext["tokens"] if t["status"] != "rejected"]
            assert "".join(t["text"] for t in emitted) == text
        if ext is not None:
            tokens.extend(ext["tokens"])
        content.append(text)
        if choice.finish_reason is not None:
            assert finish is None
            finish = choice.finish_reason
    return "".join(content), tokens, finish, usage
