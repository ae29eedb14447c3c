"""Load on one engine: 8 concurrent streaming clients x 5 requests each, a bounded queue answered with 429 and
Retry-After past it, every answer complete and in order; and a client that disconnects cancels its answer
within one round."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from server_helpers import TIMEOUT_S, check_tokens, client, read_stream, serving

from app.engine import DecodeParams

pytestmark = pytest.mark.timeout(300)
CLIENTS, REQUESTS, MAX_WAITING = 8, 5, 3
PATIENCE_S = 120.0  # per request: how long a client keeps retrying after 429 (400 tries of 20 ms ran out here)


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
                deadline = time.monotonic() + PATIENCE_S
                while True:
                    if time.monotonic() > deadline:
                        errors.append(f"rate-limited for {PATIENCE_S:.0f} s: the queue never let {prompt!r} in")
                        return
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


def assert_runs_to_length(server, model: str, max_tokens: int) -> None:
    """The greedy answer to "go" never meets the end token: cancelling is then the only way it ends early."""
    r = client(server).chat.completions.create(model=model, messages=[{"role": "user", "content": "go"}],
                                               temperature=0, max_tokens=max_tokens)
    assert r.choices[0].finish_reason == "length"


def test_a_disconnect_mid_stream_cancels_within_one_round(tiny_loaded):
    target, drafter = tiny_loaded
    finished, armed, hold = [], threading.Event(), threading.Event()

    def observe(answer, item):  # in the engine's worker thread, after the item went to the client
        if item.__class__.__name__ == "Done":
            finished.append((answer, item))
        elif item.round.round == 3 and armed.is_set():
            hold.wait(30)  # the engine is busy past round 3 until the test has hung up (a tiny round is ~1 ms)

    params = DecodeParams(gamma=2, temperature=1.0, max_new_tokens=230)
    with serving(target, drafter, params, observers=[observe]) as (server, host):
        assert_runs_to_length(server, host.pair.model_id, params.max_new_tokens)
        armed.set()
        payload = {"model": host.pair.model_id, "messages": [{"role": "user", "content": "go"}], "stream": True,
                   "temperature": 0}
        url = f"{server.url}/v1/chat/completions"
        with httpx.Client(timeout=TIMEOUT_S) as http, http.stream("POST", url, json=payload) as response:
            assert response.status_code == 200
            lines = response.iter_lines()
            seen = [line for _, line in zip(range(8), lines, strict=False) if line.startswith("data:")]
            assert len(seen) >= 4  # the role chunk and rounds 0..2
            answer = host.running
        # leaving the block closed the connection mid-answer
        for _ in range(500):
            if answer.cancelled:
                break
            time.sleep(0.01)
        assert answer.cancelled
        hold.set()
        for _ in range(500):
            if any(a is answer for a, _ in finished):
                break
            time.sleep(0.02)
        (done,) = [d for a, d in finished if a is answer]
        assert done.finish_reason == "cancelled"
        assert answer.rounds_done - answer.cancel_round <= 1
        assert done.finished.rounds == answer.rounds_done <= 5
        ok = client(server).chat.completions.create(model=host.pair.model_id, max_tokens=5,
                                                    messages=[{"role": "user", "content": "again"}])
        assert ok.choices[0].finish_reason in ("stop", "length")


def test_a_request_that_disconnects_while_queued_never_runs(tiny_loaded):
    target, drafter = tiny_loaded
    finished, hold = [], threading.Event()

    def observe(answer, item):  # runs in the engine's worker thread: holding it keeps the first answer running
        if not finished:  # its steps or, when it ended in its first round, its Done: either way it is not over
            hold.wait(30)
        if item.__class__.__name__ == "Done":
            finished.append((answer, item))

    params = DecodeParams(gamma=2, temperature=1.0, max_new_tokens=20)
    with serving(target, drafter, params, observers=[observe]) as (server, host):
        url = f"{server.url}/v1/chat/completions"
        payload = {"model": host.pair.model_id, "messages": [{"role": "user", "content": "go"}], "stream": True}
        with httpx.Client(timeout=TIMEOUT_S) as http, http.stream("POST", url, json=payload) as running:
            lines = running.iter_lines()  # one iterator: httpx streams a response once
            next(lines)  # the first answer is running
            with httpx.Client(timeout=TIMEOUT_S) as other, other.stream("POST", url, json=payload) as queued:
                assert queued.status_code == 200 and next(queued.iter_lines()).startswith("data: ")
                (waiting,) = host.queued()
            # the queued client has gone
            for _ in range(500):
                if waiting.cancelled:
                    break
                time.sleep(0.01)
            assert waiting.cancelled and host.running is not None and host.running is not waiting
            hold.set()
            # read the first answer to its end: leaving this block early disconnects it, and the server
            # rightly cancels it (seen on a loaded 2-core machine)
            assert "data: [DONE]" in list(lines)
        for _ in range(500):
            if len(finished) == 2:
                break
            time.sleep(0.02)
        (first, first_done), (second, second_done) = finished
        assert second is waiting and second_done.finish_reason == "cancelled"
        assert second_done.finished is None and second_done.rounds == () and waiting.rounds_done == 0
        assert first_done.finished is not None and host.waiting == 0


def test_a_closed_host_refuses_work_and_a_bad_bound_is_refused(tiny_loaded):
    from app.server.host import EngineHost, HostClosed, Job, ServedPair

    target, drafter = tiny_loaded
    pair = ServedPair(target, drafter, DecodeParams(max_new_tokens=4))
    with pytest.raises(ValueError, match="at least 1"):
        EngineHost(pair, max_waiting=0)
    host = EngineHost(pair, measure_baseline=False)
    host.start()
    items = []
    answer = host.submit(Job(host.encode_chat([{"role": "user", "content": "hi"}]), pair.params), items.append)
    for _ in range(500):
        if answer.done is not None:
            break
        time.sleep(0.01)
    host.close()
    assert items[-1] is answer.done and answer.done.finish_reason in ("stop", "length")
    with pytest.raises(HostClosed):
        host.submit(answer.job, items.append)


def test_the_hosts_live_gamma_hears_the_servers_own_target_step(tiny_loaded):
    """The server times its target-only step once; an answer's live γ controller hears it before its first
    round (app/session/answer_loop.py), as the window's does, so live passes are priced against this server's
    step. Without that (measure_baseline off: the twin) the controller has no live step and keeps the
    load-time v(n) (its drafting rounds are multi-row passes: they teach it no step)."""
    from app.engine.policy import AutoGamma, DrafterProfile, VerifyCosts
    from app.server.host import Done, EngineHost, Job, ServedPair

    target, drafter = tiny_loaded
    profile = DrafterProfile("d", "d", c=0.1, alpha=0.5)
    heard = {}
    for timed in (True, False):
        auto = AutoGamma(profile, VerifyCosts((0.05,) * 6))
        pair = ServedPair(target, drafter, DecodeParams(max_new_tokens=4), auto)
        host = EngineHost(pair, measure_baseline=timed)
        host.start()
        done = threading.Event()
        host.submit(Job(host.encode_chat([{"role": "user", "content": "hi"}]), pair.params, auto_gamma=True),
                    lambda item, done=done: done.set() if isinstance(item, Done) else None)
        assert done.wait(60)
        host.close()
        heard[timed] = (host.baseline_step, auto.live.step)
    (step, live_step), (no_step, no_live_step) = heard[True], heard[False]
    assert step is not None and step > 0 and live_step == step
    assert no_step is None and no_live_step is None


def test_the_host_checks_every_answer_against_the_machine_profile(tiny_loaded, tmp_path, monkeypatch, caplog):
    """As the window and `generate` do, the server feeds every round to the check of the machine profile
    (app.machine.live_check) and gives its verdict after the answer: a profile the rounds disagree with is
    disputed (the next load measures again), and the log says so. `speclens serve` serves its chat model's
    check (ServedPair.of); a pair served without one (the twin) checks nothing."""
    import logging

    from app.engine.policy import VerifyCosts
    from app.machine.live_check import LiveCheck
    from app.machine.profile import MachineProfile, VerifyTiming
    from app.server.host import Done, EngineHost, Job, ServedPair
    from app.session import ChatModel

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path))  # the dispute is written here
    target, drafter = tiny_loaded
    # a profile that says a pass takes 0.1 µs: every live round disagrees with it
    wrong = MachineProfile("serve-check", verify=VerifyTiming(VerifyCosts((1e-7,) * 12), 1e-7, 10_000))
    model = ChatModel(target.spec, "self")
    model.install(target, drafter, "self")
    model.live = LiveCheck(wrong, rounds=2)
    before = target.profile
    verdicts = {}
    try:
        for served in (ServedPair.of(model, DecodeParams(gamma=3, temperature=0.0, max_new_tokens=12)),
                       ServedPair(target, drafter, DecodeParams(gamma=3, temperature=0.0, max_new_tokens=12))):
            target.profile = before
            host = EngineHost(served, measure_baseline=False)
            host.start()
            done = threading.Event()
            with caplog.at_level(logging.WARNING, logger="app.server.host"):
                host.submit(Job(host.encode_chat([{"role": "user", "content": "abcabc"}]), served.params),
                            lambda item, done=done: done.set() if isinstance(item, Done) else None)
                assert done.wait(60)
                host.close()
            verdicts[served.check is not None] = (target.profile, caplog.text)
            caplog.clear()
    finally:
        target.profile = before
    assert model.live.settled and len(model.live.ratios) >= 2
    profile, text = verdicts[True]
    assert profile.disputed and "slower than this machine's profile" in text and "measures this machine again" in text
    assert verdicts[False] == (before, "")
