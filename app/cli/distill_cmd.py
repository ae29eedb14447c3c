"""`speclens distill`: train a feature draft for a target, with progress bars and a clean Ctrl+C."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
import time

from . import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("distill", help="train a cheap feature draft for a target from its own answers")
    p.add_argument("--target", default="default", help="'default' (embedded SmolLM2), a directory, a .gguf file or a hub id")
    p.add_argument("--out", default=None, help="output folder (default: the user data folder's drafts/<target>)")
    p.add_argument("--prompts", default=None, metavar="FILE", help="extra chat prompts, one a line, answered by the target")
    p.add_argument("--text", default=None, metavar="DIR", help="text files (.txt, .md, ...) read by teacher forcing")
    p.add_argument("--minutes", type=float, default=15.0, help="whole budget, data generation included (default 15)")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: best available)")
    p.add_argument("--vocab", type=int, default=8192, metavar="K", help="tokens in the draft's reduced head (default 8192)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--layers", type=int, default=1, help="decoder layers in the draft (default 1)")
    p.add_argument("--unroll", type=int, default=2, help="draft steps unrolled in training (default 2)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: torch's choice; 1 is much faster on a CPU shared with other jobs)")
    p.add_argument("--data-cache", default=None, metavar="FILE",
                   help="keep generated answers in FILE and reuse them when the same command runs again")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.minutes <= 0:
        raise UsageError(f"--minutes must be > 0, got {args.minutes}")
    if args.vocab < 16:
        raise UsageError(f"--vocab must be >= 16, got {args.vocab}")
    if not 1 <= args.layers <= 8:
        raise UsageError(f"--layers must be between 1 and 8, got {args.layers}")
    if not 1 <= args.unroll <= 6:
        raise UsageError(f"--unroll must be between 1 and 6, got {args.unroll}")

    from app.distill import DistillConfig, run_distill

    if args.threads:
        from app.machine import threads

        threads.pin(args.threads)
    command = "speclens " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["distill"] else None
    config = DistillConfig(
        target=args.target, out=args.out, prompts_file=args.prompts, text_dir=args.text, minutes=args.minutes,
        device=args.device, vocab_k=args.vocab, seed=args.seed, layers=args.layers, unroll=args.unroll,
        data_cache=args.data_cache, command=command,
    )
    cancel = threading.Event()
    bar = PhaseBar()

    def on_interrupt(signum, frame):
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        print("\nstopping after this step (the best checkpoint is kept); Ctrl+C again to abort", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        report = run_distill(config, progress=bar, cancel=cancel)
    finally:
        signal.signal(signal.SIGINT, previous)
        bar.close()
    if report.get("out") is None:
        print(f"cancelled during {report.get('phase', 'the run')}: nothing was written", file=sys.stderr)
        return 130
    s = report["summary"]
    print(f"wrote {report['out']}")
    if s.get("alpha_greedy") is not None:
        print(f"held-out alpha {s['alpha_greedy']:.3f} greedy, {s['alpha_sampled']:.3f} at T=0.7; "
              f"c = {s['c']:.3f}, v = {s['v']:.2f} (gamma {s['gamma']})")
    else:
        print(f"cancelled: best validation top-1 agreement per step {s.get('val_agreement')}")
    print(f"use it with: speclens generate --draft {report['out']} --prompt ...")
    return 130 if report.get("cancelled") else 0


class PhaseBar:
    """One redrawn bar per phase on a terminal (a line every few seconds otherwise), with the ETA."""

    WIDTH = 24

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.phase = None
        self.last = 0.0

    def __call__(self, p) -> None:
        now = time.monotonic()
        if p.phase != self.phase:
            if self.phase is not None and self.tty:
                self.stream.write("\n")
            self.phase, self.last = p.phase, 0.0
        elif not self.tty and now - self.last < 10 and p.fraction < 1:
            return
        self.last = now
        filled = int(self.WIDTH * min(max(p.fraction, 0.0), 1.0))
        eta = f" ETA {int(p.eta_s) // 60}:{int(p.eta_s) % 60:02d}" if p.eta_s is not None else ""
        line = f"{p.phase:<5} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {p.message}{eta}"
        self.stream.write(f"\r\033[K{line}" if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.phase is not None:
            self.stream.write("\n")
            self.stream.flush()
