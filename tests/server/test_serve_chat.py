"""The official openai client against a real server on the tiny pair: chat and completions, streamed and not,
greedy output token for token equal to `speclens generate`, and the extension fields consistent."""

from __future__ import annotations

import json

import pytest
from server_helpers import check_tokens, client, read_stream, serving

from app.cli import main
from app.engine import DecodeParams

pytestmark = pytest.mark.timeout(180)
PROMPT = "hello there"


def ask(c, model, **kw):
    kw.setdefault("messages", [{"role": "user", "content": PROMPT}])
    return c.chat.completions.create(model=model, **kw)


def test_chat_not_streamed_carries_every_token_and_the_usage(tiny_server):
    server, host = tiny_server
    r = ask(client(server), host.pair.model_id, seed=3)
    choice = r.choices[0]
    assert r.object == "chat.completion" and choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length")
    usage = r.usage.model_dump()
    emitted = check_tokens(choice.message.content, choice.model_extra["speclens"]["tokens"], usage)
    assert emitted and usage["prompt_tokens"] > 0
    s = usage["speclens"]
    assert s["drafter"] == host.pair.draft_name and s["gamma"] == 3
    assert s["measured_speedup"] > 0 and s["predicted_speedup"] > 0  # the host timed its baseline


def test_stream_equals_the_answer_not_streamed_with_the_same_seed(tiny_server):
    server, host = tiny_server
    c = client(server)
    whole = ask(c, host.pair.model_id, seed=11, temperature=0.9)
    stream = ask(c, host.pair.model_id, seed=11, temperature=0.9, stream=True,
                 stream_options={"include_usage": True})
    content, tokens, finish, usage = read_stream(stream)
    assert content == whole.choices[0].message.content
    assert tokens == whole.choices[0].model_extra["speclens"]["tokens"]
    assert finish == whole.choices[0].finish_reason
    check_tokens(content, tokens, usage)
    statuses = {t["status"] for t in tokens}
    assert "rejected" in statuses and statuses & {"accepted", "bonus"}  # the tiny draft's fates all show up


def test_stream_without_include_usage_sends_no_usage(tiny_server):
    server, host = tiny_server
    content, tokens, finish, usage = read_stream(ask(client(server), host.pair.model_id, stream=True))
    assert usage is None and finish in ("stop", "length")
    check_tokens(content, tokens)


def generate_json(tiny_pair_dirs, capsys, *extra) -> dict:
    target, draft = tiny_pair_dirs
    capsys.readouterr()
    code = main(["generate", "--prompt", PROMPT, "--target", str(target), "--draft", str(draft), "--device", "cpu",
                 "--temperature", "0", "--json", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_greedy_answer_equals_speclens_generate_token_for_token(tiny_loaded, tiny_pair_dirs, capsys):
    target, drafter = tiny_loaded
    reference = generate_json(tiny_pair_dirs, capsys, "--gamma", "3", "--max-new-tokens", "40")
    with serving(target, drafter, DecodeParams(gamma=3, temperature=0.7, max_new_tokens=40)) as (server, host):
        c = client(server)
        r = ask(c, host.pair.model_id, temperature=0)  # γ and length from the server, greedy asked for
        spec = r.choices[0].model_extra["speclens"]["tokens"]
        plain = ask(c, host.pair.model_id, temperature=0, extra_body={"speclens": {"draft": "none"}})
        plain_tokens = plain.choices[0].model_extra["speclens"]["tokens"]
    emitted = check_tokens(r.choices[0].message.content, spec, r.usage.model_dump())
    assert [t["id"] for t in emitted] == [t["id"] for t in reference["tokens"]]
    assert [t["status"] for t in emitted] == [t["status"] for t in reference["tokens"]]
    assert r.choices[0].message.content == reference["text"]
    # Exactness: greedy speculative decoding is target-only greedy decoding, token for token.
    assert [t["id"] for t in check_tokens(plain.choices[0].message.content, plain_tokens)] == [t["id"] for t in emitted]
    assert {t["status"] for t in plain_tokens} == {"target"}
    assert plain.usage.model_dump()["speclens"]["drafter"] == "none"


def test_request_gamma_and_seed_apply(tiny_server):
    server, host = tiny_server
    c = client(server)
    answers = [ask(c, host.pair.model_id, seed=5, extra_body={"speclens": {"gamma": 2}}) for _ in range(2)]
    assert answers[0].choices[0].message.content == answers[1].choices[0].message.content
    tokens = answers[0].choices[0].model_extra["speclens"]["tokens"]
    per_round: dict[int, int] = {}
    for t in tokens:
        per_round[t["round"]] = per_round.get(t["round"], 0) + (t["status"] != "rejected")
    assert max(per_round.values()) <= 3  # γ + 1
    assert answers[0].usage.model_dump()["speclens"]["gamma"] == 2


def test_stop_sequence_ends_the_answer_before_it(tiny_server):
    server, host = tiny_server
    c = client(server)
    full = ask(c, host.pair.model_id, temperature=0, max_tokens=40).choices[0].message.content
    assert len(full) > 6
    stop = full[4:6]
    cut = full.index(stop)
    for stream in (False, True):
        r = ask(c, host.pair.model_id, temperature=0, max_tokens=40, stop=[stop, "zzzz"], stream=stream)
        content, finish = (read_stream(r, per_chunk=False)[::2] if stream else (r.choices[0].message.content, r.choices[0].finish_reason))
        assert content == full[:cut] and finish == "stop"


def test_completions_endpoint_streamed_and_not(tiny_server):
    server, host = tiny_server
    c = client(server)
    r = c.completions.create(model=host.pair.model_id, prompt="abc", max_tokens=10, seed=2)
    assert r.object == "text_completion"
    check_tokens(r.choices[0].text, r.choices[0].model_extra["speclens"]["tokens"], r.usage.model_dump())
    parts = [ch.choices[0].text for ch in c.completions.create(model=host.pair.model_id, prompt="abc", max_tokens=10,
                                                               seed=2, stream=True) if ch.choices]
    assert "".join(parts) == r.choices[0].text


def test_models_and_health(tiny_server):
    server, host = tiny_server
    models = client(server).models.list().data
    assert [m.id for m in models] == [host.pair.model_id]
    assert models[0].model_extra["speclens"]["draft"] == host.pair.draft_name
    import httpx

    health = httpx.get(f"{server.url}/health", timeout=10).json()
    assert health["status"] == "ok" and health["queue"]["max_waiting"] == host.max_waiting


def test_answers_are_saved_into_the_history_when_asked(tiny_loaded, tmp_path):
    from app.history import HistoryStore
    from app.server.history_sink import HistorySink

    target, drafter = tiny_loaded
    holder = {}

    def sink(answer, item):  # the host is built inside serving(); the sink needs it
        holder.setdefault("sink", HistorySink(holder["host"], tmp_path / "history.sqlite3"))(answer, item)

    with serving(target, drafter, DecodeParams(gamma=3, temperature=1.0, max_new_tokens=16),
                 observers=[sink]) as (server, host):
        holder["host"] = host
        r = client(server).chat.completions.create(
            model=host.pair.model_id, seed=1,
            messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": PROMPT}])
    store = HistoryStore(tmp_path / "history.sqlite3")
    (conv,) = store.list_conversations()
    assert conv.system_prompt == "be brief" and conv.title == PROMPT
    user, answer = store.messages(conv.id)
    assert (user.role, user.content) == ("user", PROMPT)
    assert answer.content == r.choices[0].message.content
    ext = r.choices[0].model_extra["speclens"]["tokens"]
    assert [(t.token_id, t.status) for t in answer.tokens] == [(t["id"], t["status"]) for t in ext]
    assert answer.stats["source"] == "api" and answer.stats["alpha"] == r.usage.model_dump()["speclens"]["alpha"]
