"""Load on one engine: 8 concurrent streaming clients x 5 requests each, a bounded queue answered with 429 and
Retry-After past it, every answer complete and in order; and a client that disconnects cancels its answer
within one round."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from conftest import TIMEOUT_S, client, serving
from helpers import check_tokens, read_stream

from app.engine import DecodeParams

pytestmark = pytest.mark.timeout(300)
CLIENTS, REQUESTS, MAX_WAITING = 8, 5, 3
ATTEMPTS = 400  # per request: a bound on retries after 429, never reached in practice


def test_concurrent_streams_get_complete_answers_or_429(tiny_loaded):
    import openai

    target, drafter = tiny_loaded
    params = DecodeParams(gamma=3, temperature=0.0, max_new_tokens=40)
    with serving(target, drafter, params, max_waiting=MAX_WAITING) as (server, host):
        model = host.pair.model_id
        prompts = [f"client {'abcdefgh'[i]} asks" for i in range(CLIENTS)]
        reference = {}
        for p in prompts:  # greedy: each prompt has one answer, whatever else the engine is doing
            r = client(server).chat.completions.create(model=model, messages=[{"role": "user", "content": p}])
            reference[p] = (r.choices[0].message.content, r.choices[0].model_extra["speclens"]["tokens"])
        errors, rate_limited, answers = [], [], []
        start = threading.Barrier(CLIENTS)

        def run(prompt: str) -> None:
            c = client(server)
            start.wait()
            for _ in range(REQUESTS):
                for _attempt in range(ATTEMPTS):
                    try:
                        stream = c.chat.completions.create(
                            model=model, messages=[{"role": "user", "content": prompt}], stream=True,
                            stream_options={"include_usage": True})
                        answers.append((prompt, read_stream(stream)))
                        break
                    except openai.RateLimitError as exc:
                        retry = exc.response.headers.get("retry-after", "")
                        rate_limited.append(retry)
                        assert exc.body["code"] == "rate_limit_exceeded"
                        time.sleep(0.02)  # the test does not wait the whole Retry-After
                    except Exception as exc:  # any other failure is an error of the server
                        errors.append(repr(exc))
                        return

        threads = [threading.Thread(target=run, args=(p,)) for p in prompts]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        assert not any(t.is_alive() for t in threads)
        assert errors == []
        assert len(answers) == CLIENTS * REQUESTS
        for prompt, (content, tokens, finish, usage) in answers:
            assert (content, tokens) == reference[prompt]  # complete, in order, nothing from another answer
            assert finish in ("stop", "length") and usage is not None
            check_tokens(content, tokens, usage)
        assert rate_limited and all(r.isdigit() and int(r) >= 1 for r in rate_limited)
        assert host.max_waiting_seen <= MAX_WAITING


def test_a_disconnect_mid_stream_cancels_within_one_round(tiny_loaded):
    target, drafter = tiny_loaded
    finished = []
    observe = lambda answer, item: item.__class__.__name__ == "Done" and finished.append((answer, item))  # noqa: E731
    params = DecodeParams(gamma=2, temperature=1.0, max_new_tokens=230)  # a long answer: ~230 rounds
    with serving(target, drafter, params, observers=[observe]) as (server, host):
        payload = {"model": host.pair.model_id, "messages": [{"role": "user", "content": "go"}], "stream": True}
        url = f"{server.url}/v1/chat/completions"
        with httpx.Client(timeout=TIMEOUT_S) as http, http.stream("POST", url, json=payload) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            seen = [line for _, line in zip(range(6), lines, strict=False) if line.startswith("data:")]
            assert len(seen) >= 2  # the role chunk and at least one round
        # leaving the block closed the connection mid-answer
        for _ in range(500):
            if finished:
                break
            time.sleep(0.02)
        (answer, done), = finished
        assert done.finish_reason == "cancelled" and answer.cancel_round is not None
        assert answer.rounds_done - answer.cancel_round <= 1
        assert done.finished.rounds == answer.rounds_done < params.max_new_tokens
        ok = client(server).chat.completions.create(model=host.pair.model_id, max_tokens=5,
                                                    messages=[{"role": "user", "content": "again"}])
        assert ok.choices[0].finish_reason in ("stop", "length")
