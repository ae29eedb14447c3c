"""A real server on 127.0.0.1 (an ephemeral port) over the tiny pair, and the official openai client for it."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from app.engine import DecodeParams

TIMEOUT_S = 60  # every client call; no test waits unbounded


@pytest.fixture(scope="session")
def tiny_loaded(tiny_pair_dirs):
    from app.models import load_model, make_drafter

    target_dir, draft_dir = tiny_pair_dirs
    target = load_model(str(target_dir), device="cpu")
    return target, make_drafter(str(draft_dir), target)


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


@pytest.fixture(scope="module")
def tiny_server(tiny_loaded):
    """Sampling at temperature 1 (every token status shows up), γ 3, 24 new tokens by default."""
    target, drafter = tiny_loaded
    with serving(target, drafter, DecodeParams(gamma=3, temperature=1.0, max_new_tokens=24, seed=None)) as sh:
        yield sh
