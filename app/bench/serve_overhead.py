"""The local server's cost: tokens/s streamed through `speclens serve` (HTTP, JSON, SSE) against `generate`.

Runs alternate headless / served per prompt and repeat, on the same pair and settings. Two clocks:
wall (the caller's, from the request to the last byte, against encode + generate) and the engine's
own (FinishedEvent.elapsed, first round to the end), which shows what serving costs the engine
thread itself (the GIL shared with the HTTP thread). First token: from sending the request to the
first chunk that carries a token, against the answer's first round (prefill included), in rounds.
"""

from __future__ import annotations

import json
import statistics
import time
import urllib.request

from app.engine import DecodeParams, generate

from .prompts import BenchPrompt
from .runners import Pair


def measure_serve_overhead(pair: Pair, prompts: list[BenchPrompt], params: DecodeParams, repeats: int) -> dict:
    from app.server.host import Done, EngineHost, ServedPair
    from app.server.server import LocalServer

    done: list = []
    host = EngineHost(ServedPair(pair.target, pair.drafter, params, static=pair.static), max_waiting=1)
    host.subscribe(lambda _answer, item: done.append(item) if isinstance(item, Done) else None)
    host.start()
    server = LocalServer(host, port=0).start()
    t = pair.target
    headless, served = [], []
    try:
        for _ in range(repeats):
            for p in prompts:
                text = p.messages[-1]["content"]
                start = time.perf_counter()
                ids = t.encode_chat([{"role": "user", "content": text}])
                fin = generate(t.model, ids, pair.drafter, params, stop_token_ids=t.stop_token_ids,
                               vocab_size=t.vocab_size, tokenizer=t.tokenizer, static=pair.static).finished
                assert fin is not None
                headless.append({"wall": time.perf_counter() - start, "engine": fin.elapsed,
                                 "tokens": fin.new_tokens, "ids": list(fin.token_ids)})
                run = _stream(server.url, host.pair.model_id, text, params)
                for _ in range(1000):  # observers run just after the client got its last chunk
                    if done:
                        break
                    time.sleep(0.01)
                answer = done.pop()
                rounds = [r.draft_time + r.verify_time for r in answer.rounds]
                served.append(run | {"engine": answer.finished.elapsed, "ids": list(answer.finished.token_ids),
                                     "round0": rounds[0], "mean_round": sum(rounds) / len(rounds)})
    finally:
        server.stop()
        host.close()

    def tps(runs: list[dict], clock: str) -> float:
        return sum(r["tokens"] for r in runs) / sum(r[clock] for r in runs)

    first = [(r["first_token"] - r["round0"]) / r["mean_round"] for r in served]
    return {
        "setting": "greedy" if params.greedy else f"T={params.temperature:g}", "gamma": params.gamma,
        "drafter": host.pair.draft_name, "answers": len(served),
        "generate_tps": tps(headless, "wall"), "served_tps": tps(served, "wall"),
        "overhead": 1.0 - tps(served, "wall") / tps(headless, "wall"),
        "generate_engine_tps": tps(headless, "engine"), "served_engine_tps": tps(served, "engine"),
        "engine_overhead": 1.0 - tps(served, "engine") / tps(headless, "engine"),
        "first_token_s": statistics.median(r["first_token"] for r in served),
        "first_round_s": statistics.median(r["round0"] for r in served),
        "mean_round_s": statistics.median(r["mean_round"] for r in served),
        "first_token_after_first_round_rounds": statistics.median(first),
        "same_tokens": all(h["ids"] == s["ids"] for h, s in zip(headless, served, strict=True)),
    }


def _stream(url: str, model: str, text: str, params: DecodeParams) -> dict:
    """One streamed chat answer: wall seconds, tokens, and seconds to the first chunk carrying a token."""
    body = {"model": model, "messages": [{"role": "user", "content": text}], "stream": True,
            "stream_options": {"include_usage": True}, "temperature": params.temperature, "top_p": params.top_p,
            "max_tokens": params.max_new_tokens, "seed": params.seed,
            "speclens": {"gamma": params.gamma}, "top_k": params.top_k}
    request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    start = time.perf_counter()
    first, tokens = None, 0
    with urllib.request.urlopen(request, timeout=600) as response:
        for line in response:
            if not line.startswith(b"data: {"):
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            if first is None and chunk["choices"] and chunk["choices"][0].get("speclens", {}).get("tokens"):
                first = time.perf_counter() - start
    return {"wall": time.perf_counter() - start, "tokens": tokens, "first_token": first}


def markdown_lines(s: dict) -> list[str]:
    return ["", "## Local server overhead", "",
            f"{s['answers']} answers ({s['setting']}, γ {s['gamma']}, draft {s['drafter']}): `generate` "
            f"{s['generate_tps']:.1f} tok/s, streamed through `speclens serve` {s['served_tps']:.1f} tok/s: overhead "
            f"**{100 * s['overhead']:.1f}%** (engine clock {100 * s['engine_overhead']:.1f}%); first token "
            f"{1000 * s['first_token_s']:.0f} ms after the request, the first round takes "
            f"{1000 * s['first_round_s']:.0f} ms (median excess {s['first_token_after_first_round_rounds']:.2f} rounds of "
            f"{1000 * s['mean_round_s']:.0f} ms); same tokens: {'yes' if s['same_tokens'] else 'NO'}"]
