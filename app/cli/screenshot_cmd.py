"""`speclens screenshot out.png`: the main window rendered offscreen after a short chat."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from . import UsageError

DEFAULT_PROMPT = "Explain speculative decoding in two sentences."


def add_parser(sub) -> None:
    p = sub.add_parser("screenshot", help="render the main window offscreen after a short chat, save a PNG")
    p.add_argument("output", help="the .png file to write")
    p.add_argument("--prompt", action="append", default=None,
                   help="a user message (repeat for several turns; default: a question about speculative decoding)")
    p.add_argument("--target", default="default")
    p.add_argument("--draft", default="auto", help="as for generate (default: auto, the app's default; "
                   "--step, --race and --presentation speculate with the fastest measured drafter where auto "
                   "runs target-only, and say so)")
    p.add_argument("--theme", choices=("light", "dark", "system"), default="light")
    p.add_argument("--gamma", type=int, default=None, help="draft length (default: the app's)")
    p.add_argument("--max-new-tokens", type=int, default=96)
    p.add_argument("--seed", type=int, default=None, help="fixed sampling seed (reproducible answers)")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature (default: the app's)")
    p.add_argument("--step", type=int, default=None, metavar="ROUND",
                   help="show the round step-through at ROUND (1-based; 0: the first round with a rejection)")
    p.add_argument("--lang", choices=("en", "zh_CN"), default="en", help="UI language (default: English)")
    p.add_argument("--lab", nargs="?", const="chain", choices=("chain", "tree"), default=None,
                   help="render the lab (View → Lab) after simulating its example: the paper's chain (default) or "
                   "the token tree's three candidates; no model is loaded")
    p.add_argument("--size", default="1600x1000", help="window size WIDTHxHEIGHT")
    p.add_argument("--data-dir", default=None, help="history and settings folder (default: a fresh temporary one)")
    p.add_argument("--presentation", action="store_true", help="render presentation mode")
    p.add_argument("--race", nargs="?", const="target", choices=("target", "lookup", "tree"), default=None,
                   help="render the race view: speculative against target-only (default), against prompt lookup, "
                   "or the draft as a chain against it as a token tree")
    p.add_argument("--replay", default=None, help="render the window after playing this recording (loads no model)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.output)
    if out.suffix.lower() != ".png":
        raise UsageError(f"the output must be a .png file, got {out.name!r}")
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size must look like 1600x1000, got {args.size!r}") from None
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["SPECLENS_LANG"] = args.lang  # read when the QApplication is created
    # A fresh data folder keeps screenshots free of the user's own chats and window layout.
    os.environ["SPECLENS_DATA_DIR"] = args.data_dir or tempfile.mkdtemp(prefix="speclens-shot-")
    replay = Path(args.replay) if args.replay else None
    if replay is not None:
        from app.recording import read

        read(replay)  # a bad recording stops here with its one-line message
    from app.gui.screenshot import take, take_lab

    if args.lab:
        error = take_lab(out, args.theme, tab=args.lab)
        if error:
            print(f"speclens screenshot: error: {error}", file=sys.stderr)
            return 1
        print(out)
        return 0
    if args.step is not None and args.step < 0:
        raise UsageError(f"--step must be a round number >= 0, got {args.step}")
    error = take(out, args.prompt or [DEFAULT_PROMPT], args.target, args.draft, args.theme, (width, height),
                 args.gamma, args.max_new_tokens, step=args.step, seed=args.seed, temperature=args.temperature,
                 presentation=args.presentation, race=args.race, replay=replay,
                 say=lambda line: print(f"speclens screenshot: {line}", file=sys.stderr))
    if error:
        print(f"speclens screenshot: error: {error}", file=sys.stderr)
        return 1
    print(out)
    return 0
