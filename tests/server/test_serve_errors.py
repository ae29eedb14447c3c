"""Every bad request gets its 4xx with an OpenAI-shaped error body, and the next good request succeeds;
a key, once set, is required; an address other than loopback needs a key."""

from __future__ import annotations

import json

import httpx
import pytest
from server_helpers import TIMEOUT_S, client, serving

from app.cli import main
from app.engine import DecodeParams
from app.server.body import MAX_BODY

pytestmark = pytest.mark.timeout(120)
GOOD = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


def body(**fields) -> bytes:
    return json.dumps({"model": MODEL, **GOOD, **fields}).encode()


MODEL = "target"  # the tiny target's folder name, which load_model names it by
BAD = {
    "malformed JSON": (b'{"model": "target", "messages": [', 400, None),
    "not an object": (b"[1, 2]", 400, None),
    "missing messages": (json.dumps({"model": MODEL}).encode(), 400, "messages"),
    "temperature a string": (body(temperature="hot"), 400, "temperature"),
    "max_tokens a float": (body(max_tokens=2.5), 400, "max_tokens"),
    "content a number": (body(messages=[{"role": "user", "content": 7}]), 400, "messages.0.content"),
    "stream a string": (body(stream="yes"), 400, "stream"),
    "unknown model": (json.dumps({**GOOD, "model": "gpt-4o"}).encode(), 404, "model"),
    "max_tokens 0": (body(max_tokens=0), 400, "max_tokens"),
    "max_tokens beyond the context": (body(max_tokens=10_000), 400, "max_tokens"),
    "empty messages": (body(messages=[]), 400, "messages"),
    "unknown role": (body(messages=[{"role": "wizard", "content": "hi"}]), 400, "messages.0.role"),
    "n 2": (body(n=2), 400, "n"),
    "a penalty": (body(frequency_penalty=0.5), 400, "frequency_penalty"),
    "gamma out of range": (body(speclens={"gamma": 0}), 400, "speclens.gamma"),
    "a draft not loaded": (body(speclens={"draft": "other"}), 400, "speclens.draft"),
    "too many stops": (body(stop=["a", "b", "c", "d", "e"]), 400, "stop"),
    "oversized body": (body(messages=[{"role": "user", "content": "x" * (MAX_BODY + 1)}]), 413, None),
}


@pytest.fixture(scope="module")
def raw(tiny_loaded):
    target, drafter = tiny_loaded
    assert target.name == MODEL
    params = DecodeParams(gamma=2, temperature=1.0, max_new_tokens=8)
    with serving(target, drafter, params) as (server, _), httpx.Client(base_url=server.url, timeout=TIMEOUT_S) as http:
        yield http, server


def assert_openai_error(response: httpx.Response, status: int, param: str | None) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"] and "\n" not in error["message"]
    assert error["param"] == param
    return error


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_gets_its_4xx_and_the_next_request_succeeds(raw, case):
    http, _ = raw
    payload, status, param = BAD[case]
    response = http.post("/v1/chat/completions", content=payload, headers={"Content-Type": "application/json"})
    error = assert_openai_error(response, status, param)
    assert error["type"] == "invalid_request_error"
    good = http.post("/v1/chat/completions", content=body())
    assert good.status_code == 200 and good.json()["choices"][0]["message"]["content"] is not None


def test_unknown_paths_and_methods_get_openai_errors(raw):
    http, _ = raw
    assert_openai_error(http.get("/v1/nowhere"), 404, None)
    assert_openai_error(http.get("/v1/chat/completions"), 405, None)
    assert http.post("/v1/completions", content=json.dumps({"model": MODEL, "prompt": "ab", "max_tokens": 3})).is_success


def test_the_openai_client_raises_its_own_error_types(raw):
    import openai

    _, server = raw
    c = client(server)
    with pytest.raises(openai.NotFoundError) as info:
        c.chat.completions.create(model="gpt-4o", messages=GOOD["messages"])
    assert info.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model=MODEL, messages=[])
    assert c.chat.completions.create(model=MODEL, messages=GOOD["messages"], max_tokens=3).choices


def test_a_set_key_is_required(tiny_loaded):
    import openai

    target, drafter = tiny_loaded
    with serving(target, drafter, DecodeParams(max_new_tokens=4), api_key="s3cret") as (server, _):
        with pytest.raises(openai.AuthenticationError):
            client(server, api_key="wrong").chat.completions.create(model=MODEL, messages=GOOD["messages"])
        response = httpx.post(f"{server.url}/v1/chat/completions", content=body(), timeout=TIMEOUT_S)
        assert_openai_error(response, 401, None)
        assert_openai_error(httpx.get(f"{server.url}/v1/models", timeout=TIMEOUT_S), 401, None)
        answer = client(server, api_key="s3cret").chat.completions.create(model=MODEL, messages=GOOD["messages"])
        assert answer.choices[0].finish_reason in ("stop", "length")


def test_an_address_beyond_loopback_needs_a_key(tiny_loaded, tiny_pair_dirs, capsys):
    from app.server.auth import check_exposure, is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.4") and not is_loopback("example.org")
    check_exposure("0.0.0.0", "key")
    with pytest.raises(ValueError, match="--api-key"):
        check_exposure("0.0.0.0", None)
    target, _ = tiny_pair_dirs
    assert main(["serve", "--host", "0.0.0.0", "--target", str(target), "--draft", "none"]) == 2
    assert "--api-key" in capsys.readouterr().err


def test_a_port_in_use_is_one_clear_error_and_the_server_already_there_keeps_it(tiny_loaded):
    """Bound in the caller's thread: a RuntimeError naming the port, and no exception in a server thread
    (uvicorn's thread printed a bind traceback to the terminal of the window's user before)."""
    import threading

    from app.server.host import EngineHost, ServedPair
    from app.server.server import LocalServer

    target, drafter = tiny_loaded
    with serving(target, drafter, DecodeParams(max_new_tokens=4)) as (server, _):
        host = EngineHost(ServedPair(target, drafter, DecodeParams(max_new_tokens=4), None))
        seen: list = []
        old_hook, threading.excepthook = threading.excepthook, lambda args: seen.append(args.exc_value)
        try:
            with pytest.raises(RuntimeError, match=f"127.0.0.1:{server.port}"):
                LocalServer(host, address="127.0.0.1", port=server.port).start()
        finally:
            threading.excepthook = old_hook
            host.close()
        assert seen == []
        assert httpx.get(f"{server.url}/health", timeout=TIMEOUT_S).json()["status"] == "ok"
