"""`speclens selftest`: prove an installation (source or frozen) works end to end, offline.

Loads the model pair, checks that greedy speculative decoding reproduces target-only greedy
decoding token for token (the exactness guarantee at temperature 0), asks the same of the local
server (`speclens serve`) on an ephemeral loopback port, opens the main window offscreen and closes
it, then prints a short report. Exit 0 on success, 1 on a failed check.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .common import add_model_args, target_kwargs

PROMPT = "Explain in one sentence why the sky is blue."


class SelftestFailed(Exception):
    """A check did not hold: printed as one line, exit code 1."""


def add_parser(sub) -> None:
    p = sub.add_parser("selftest", help="check that models, exact decoding and the GUI work (headless)")
    add_model_args(p)
    p.add_argument("--gamma", type=int, default=4, help="draft length per round (1..16)")
    p.add_argument("--max-new-tokens", type=int, default=24)
    p.add_argument("--prompt", default=PROMPT)
    p.add_argument("--models", default=None, metavar="DIR",
                   help="instead, check every model folder in DIR (e.g. one per architecture) against its self-draft")
    # The self-test checks speculative output, so it needs a drafter: 'auto' may choose none.
    p.set_defaults(run=run, draft="self")


def run(args: argparse.Namespace) -> int:
    # Before anything imports Qt: a self-test must run on machines without a display.
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    start = time.perf_counter()
    what = f"the models in {args.models}" if args.models else f"target {args.target!r} and draft {args.draft!r}"
    print(f"loading {what} ...", file=sys.stderr, flush=True)
    try:
        if args.models:
            print("\n".join(check_models(args)), flush=True)
        else:
            lines, checked = check_decoding(args)
            print("\n".join(lines), flush=True)
            print(check_server(*checked), flush=True)
            print(check_window(), flush=True)
    except SelftestFailed as exc:
        print(f"speclens selftest: FAILED: {exc}", file=sys.stderr)
        return 1
    print(f"selftest passed in {time.perf_counter() - start:.1f} s")
    return 0


def check_decoding(args: argparse.Namespace) -> tuple[list[str], tuple]:
    """(report lines, (target, drafter, params, prompt, greedy token ids) for the server check)."""
    from app.engine import DecodeParams, generate
    from app.models import load_model

    from .common import choose_drafter

    params = DecodeParams(gamma=args.gamma, temperature=0.0, max_new_tokens=args.max_new_tokens)
    target = load_model(args.target, device=args.device, **target_kwargs(args), trust_remote_code=args.trust_remote_code)
    args.draft = exact_check_draft(args.draft, target)
    # --draft auto: chosen by measurement; target-only there still checks the fastest measured drafter
    drafter, _ = choose_drafter(args, target, {"trust_remote_code": args.trust_remote_code}, need_draft=True)
    if drafter is None:
        raise SelftestFailed("--draft none leaves nothing to check; use a drafter")
    input_ids = target.encode_chat([{"role": "user", "content": args.prompt}])
    common = {"stop_token_ids": target.stop_token_ids, "vocab_size": target.vocab_size, "tokenizer": target.tokenizer}
    spec = generate(target.model, input_ids, drafter, params, **common)
    plain = generate(target.model, input_ids, None, params, **common)
    if not spec.token_ids:
        raise SelftestFailed("speculative decoding produced no tokens")
    if spec.token_ids != plain.token_ids:
        at = next((i for i, (a, b) in enumerate(zip(spec.token_ids, plain.token_ids, strict=False)) if a != b),
                  min(len(spec.token_ids), len(plain.token_ids)))
        raise SelftestFailed(
            f"greedy speculative output differs from target-only greedy output at token {at} "
            f"({len(spec.token_ids)} vs {len(plain.token_ids)} tokens)"
        )
    s = spec.summary(params.gamma)
    fs, fp = spec.finished, plain.finished
    assert fs is not None and fp is not None  # both ran to their end
    alpha = f"{s.alpha:.3f}" if s.alpha is not None else "n/a"
    return [
        f"target: {target.name} on {target.device} ({target.kernels}), "
        f"draft: {drafter.name}, loaded in {target.load_seconds:.1f} s",
        f"answer: {spec.text.strip()!r}",
        f"speculative (gamma {params.gamma}, greedy): {fs.new_tokens} tokens in {fs.elapsed:.2f} s, "
        f"{fs.rounds} rounds, {s.tokens_per_round:.2f} tokens/round, alpha {alpha}",
        f"target-only greedy: {fp.new_tokens} tokens in {fp.elapsed:.2f} s; outputs identical: yes",
    ], (target, drafter, params, args.prompt, spec.token_ids)


def exact_check_draft(spec: str, target) -> str:
    """The draft to check against: the self-draft, or where the target already runs in the cheapest dtype
    (bf16 on a CPU), its trained draft, else prompt lookup."""
    from app.drafting.drafts import self_draft_dtype
    from app.drafting.registry import PROMPT_LOOKUP, SELF_DRAFT, TRAINED_DRAFT
    from app.drafting.trained_drafts import list_trained_drafts

    if spec != SELF_DRAFT or self_draft_dtype(target) is not None:
        return spec
    return TRAINED_DRAFT if list_trained_drafts(target) else PROMPT_LOOKUP


def check_models(args: argparse.Namespace) -> list[str]:
    """Each folder in --models loads (its architecture's modules are present) and decodes exactly."""
    root = Path(args.models).expanduser()
    folders = sorted(p for p in root.iterdir() if (p / "config.json").is_file()) if root.is_dir() else []
    if not folders:
        raise SelftestFailed(f"no model folders (with a config.json) in {root}")
    lines = []
    for folder in folders:
        one = argparse.Namespace(**{**vars(args), "target": str(folder), "draft": "self"})
        try:
            result, _ = check_decoding(one)
        except Exception as exc:  # a module missing from a frozen build surfaces here
            raise SelftestFailed(f"model {folder.name}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
        lines.append(f"model {folder.name}: {result[-1]}")
    return lines


def check_server(target, drafter, params, prompt: str, expected: list[int]) -> str:
    """The local server on an ephemeral loopback port answers the same prompt greedily with the same tokens."""
    import json
    import urllib.request

    from app.server.host import EngineHost, ServedPair
    from app.server.server import LocalServer

    start = time.perf_counter()
    host = EngineHost(ServedPair(target, drafter, params), max_waiting=1)
    host.start()
    server = LocalServer(host, port=0)
    try:
        server.start()
        url = server.url
        body = {"model": host.pair.model_id, "messages": [{"role": "user", "content": prompt}], "temperature": 0,
                "max_tokens": params.max_new_tokens}
        request = urllib.request.Request(f"{url}/v1/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=300) as response:
            answer = json.load(response)
    except Exception as exc:  # a module missing from a frozen build surfaces here
        raise SelftestFailed(f"the local server: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    finally:
        server.stop()
        host.close()
    ids = [t["id"] for t in answer["choices"][0]["speclens"]["tokens"] if t["status"] != "rejected"]
    if ids != expected:
        raise SelftestFailed(f"the local server's greedy answer differs from the engine's ({len(ids)} vs "
                             f"{len(expected)} tokens)")
    return f"local server on {url}: greedy answer identical ({len(ids)} tokens) in {time.perf_counter() - start:.1f} s"


def check_window() -> str:
    start = time.perf_counter()
    from app.gui.qapplication import application

    app = application(sys.argv[:1])
    from app.gui.main_window import MainWindow  # after the QApplication exists (pyqtgraph reads it)

    window = MainWindow(autoload=False)  # the models were just checked; do not load them twice
    window.show()
    app.processEvents()
    shown = window.isVisible()
    window.close()
    app.processEvents()
    if not shown:
        raise SelftestFailed("the main window did not show")
    return f"main window opened and closed ({app.platformName()}) in {time.perf_counter() - start:.1f} s"
