"""`speclens record --prompt "…" --out demo.speclens`: record one answer headless, for replay on
any machine (no model, no GPU needed there)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import UsageError
from .common import (
    add_model_args,
    add_sampling_args,
    add_tree_args,
    answer_loop,
    choose_drafter,
    load_kwargs,
    params_from,
    target_kwargs,
)


def add_parser(sub) -> None:
    p = sub.add_parser("record", help="record one answer (every event and its timing) into a .speclens file")
    p.add_argument("--prompt", required=True, help="the user message")
    p.add_argument("--system", default=None, help="optional system prompt")
    p.add_argument("--out", required=True, help="the recording to write (.speclens)")
    p.add_argument("--baseline-steps", type=int, default=6,
                   help="target-only steps timed first, for the measured speedup (0 skips)")
    add_model_args(p)
    add_sampling_args(p)
    add_tree_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from app.recording import SUFFIX, Recording, write
    from app.recording.builder import header

    if not args.prompt.strip():
        raise UsageError("the prompt is empty")
    out = Path(args.out)
    if out.suffix != SUFFIX:
        raise UsageError(f"the output must end in {SUFFIX}, got {out.name!r}")
    if not out.parent.is_dir():
        raise UsageError(f"no folder {out.parent} to write the recording into")
    params = params_from(args)
    from app.models import load_model
    from app.recording.headless import record_run

    kwargs = load_kwargs(args)
    target = load_model(args.target, device=args.device, **target_kwargs(args), **kwargs)
    draft_kwargs = dict(kwargs, device=args.draft_device) if args.draft_device else kwargs
    # A recording is made to show speculation: where auto runs target-only, it records the fastest
    # measured drafter and says so (`--draft none` records target-only).
    drafter, auto = choose_drafter(args, target, draft_kwargs, need_draft=True)
    turns = ([{"role": "system", "content": args.system}] if args.system else []) + [
        {"role": "user", "content": args.prompt}
    ]
    # γ on auto: the live controller's round by round, as the app decodes (each round's γ is recorded)
    answer = answer_loop(target, drafter, auto, params)
    run_ = record_run(answer, turns, baseline_steps=max(0, args.baseline_steps))
    write(out, Recording(header("answer", args.prompt[:60], str(target.device)), [run_]))
    fin = run_.finished
    assert fin is not None  # the answer ran to its end
    print(f"{out}: {fin.new_tokens} tokens in {len(run_.steps)} rounds, {fin.elapsed:.2f} s", file=sys.stderr)
    if (why := answer.disagreement()) is not None:
        print(f"{why.text}: the next load measures this machine again (or run speclens calibrate)", file=sys.stderr)
    return 0
