"""`speclens generate`: stream one answer in the terminal with token statuses coloured."""

from __future__ import annotations

import argparse
import json
import sys

from . import UsageError
from .common import (
    add_engine_args,
    add_model_args,
    add_sampling_args,
    add_tree_args,
    answer_loop,
    choose_drafter,
    load_kwargs,
    params_from,
    static_decoder,
    target_kwargs,
)

# Keyed by Status values (a StrEnum), so torch is not imported before a command runs.
ANSI = {
    "accepted": "\033[38;5;33m",  # blue
    "corrected": "\033[38;5;208m\033[4m",  # orange, underlined
    "bonus": "\033[38;5;35m\033[1m",  # green, bold
    "target": "",
    "rejected": "\033[2m\033[9m",  # dim, struck through
}
RESET = "\033[0m"


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="generate one answer in the terminal")
    p.add_argument("--prompt", required=True, help="the user message")
    p.add_argument("--system", default=None, help="optional system prompt")
    add_model_args(p)
    add_sampling_args(p)
    add_engine_args(p)
    add_tree_args(p)
    p.add_argument("--show-rejected", action="store_true", help="print rejected draft tokens struck through")
    p.add_argument("--json", action="store_true", help="print token ids, pieces, statuses and statistics as JSON")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not args.prompt.strip():
        raise UsageError("the prompt is empty")
    params = params_from(args)
    log = sys.stderr
    target, drafter, auto = load_pair(args, log)
    messages = ([{"role": "system", "content": args.system}] if args.system else []) + [
        {"role": "user", "content": args.prompt}
    ]
    input_ids = target.encode_chat(messages)
    # ValueError (an unsupported model or drafter): one line, exit 2. Auto γ may go up to 8.
    static = static_decoder(args, target.model, drafter, auto.gamma_max if auto is not None else params.gamma, log)
    colour = sys.stdout.isatty() and not args.json
    from app.engine import Result, Status, TokenEvent

    # γ re-chosen before every round from the live α, c and verify cost; the machine profile checked
    # against this answer's rounds.
    answer = answer_loop(target, drafter, auto, params, static)
    result = Result()
    for event in answer.events(input_ids):
        result.add(event)
        if args.json or not isinstance(event, TokenEvent):
            continue
        if event.status is Status.REJECTED and not args.show_rejected:
            continue
        if colour:
            sys.stdout.write(f"{ANSI[event.status]}{event.text}{RESET}")
        elif event.emitted:
            sys.stdout.write(event.text)
        sys.stdout.flush()
    gamma = max((r.gamma for r in result.rounds), default=1) or 1
    if args.json:
        target_info = {"name": target.name, "device": str(target.device),
                       "dtype": str(target.dtype).removeprefix("torch."), "kernels": target.kernels}
        print(json.dumps({"target": target_info} | to_json(result, gamma), indent=1))
    else:
        print()
        print(format_summary(result, gamma, drafter is not None), file=log)
    if (why := answer.disagreement()) is not None:
        print(f"{why.text}: the next load measures this machine again (or run speclens calibrate)", file=log)
    return 0


def load_pair(args: argparse.Namespace, log):
    """(target, drafter or None, live γ controller or None) from the model options, saying what loaded."""
    from app.models import load_model

    kwargs = load_kwargs(args)
    target = load_model(args.target, device=args.device, **target_kwargs(args), **kwargs)
    draft_kwargs = dict(kwargs, device=args.draft_device) if args.draft_device else kwargs
    drafter, auto = choose_drafter(args, target, draft_kwargs, log)
    for warning in target.extra.get("warnings", ()):
        print(f"warning: {warning}", file=log)
    print(
        f"target: {target.name} on {target.device} ({target.kernels}"
        f"{f', {t.threads} thread' + 's' * (t.threads > 1) if (t := target.threads) else ''}), "
        f"draft: {drafter.name if drafter else 'none'}, loaded in {target.load_seconds:.1f} s",
        file=log,
    )
    return target, drafter, auto


def to_json(result, gamma: int) -> dict:
    s = result.summary(gamma)
    fin = result.finished
    return {
        "tokens": [
            {"id": t.token_id, "text": t.text, "status": t.status.value, "round": t.round, "p": t.p, "q": t.q,
             "accept_prob": t.accept_prob}
            for t in result.tokens
        ],
        "rejected": [{"id": t.token_id, "round": t.round, "position": t.position} for t in result.rejected],
        "text": result.text,
        "finish_reason": fin.reason,
        "stats": {
            "new_tokens": fin.new_tokens, "rounds": fin.rounds, "seconds": fin.elapsed,
            "tokens_per_second": fin.new_tokens / fin.elapsed if fin.elapsed else None,
            "alpha": s.alpha, "alpha_mle": s.alpha_mle, "tokens_per_round": s.tokens_per_round,
            "acceptance_histogram": s.histogram, "per_position_acceptance": s.per_position,
            "draft_seconds": s.draft_time, "verify_seconds": s.verify_time,
        },
    }


def format_summary(result, gamma: int, speculative: bool) -> str:
    fin = result.finished
    s = result.summary(gamma)
    rate = fin.new_tokens / fin.elapsed if fin.elapsed else 0.0
    lines = [f"{fin.new_tokens} tokens in {fin.elapsed:.2f} s ({rate:.1f} tok/s), {fin.rounds} rounds, stop: {fin.reason}"]
    if speculative and s.alpha is not None:
        counts = {name: sum(1 for t in result.tokens if t.status == name) for name in ANSI}
        lines.append(
            f"accepted {counts['accepted']}, corrected {counts['corrected']}, bonus {counts['bonus']}, target-only {counts['target']}; alpha {s.alpha:.3f}; {s.tokens_per_round:.2f} tokens/round"
        )
        lines.append("accepted-length histogram (0..gamma): " + " ".join(str(c) for c in s.histogram))
    return "\n".join(lines)
