"""`speclens` command line: the GUI by default; subcommands generate, serve, bench, calibrate, selftest,
fetch-pair.

Each subcommand lives in its own module exposing `add_parser(subparsers)`; the handler is
stored as the parser's `run` default and returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from app import __version__

SUBCOMMANDS = ("gui", "generate", "serve", "bench", "calibrate", "distill", "selftest", "screenshot", "record", "replay", "fetch_pair")


class UsageError(Exception):
    """Bad input from the command line: printed as one line, exit code 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="speclens", description="Exact speculative decoding, live.")
    parser.add_argument("--version", action="version", version=f"speclens {__version__}")
    sub = parser.add_subparsers(dest="command")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"app.cli.{name}_cmd")
        except ModuleNotFoundError as exc:
            if exc.name != f"app.cli.{name}_cmd":
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version"):
        argv.insert(0, "gui")
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _user_facing(exc):
            raise
        print(f"speclens {args.command}: error: {exc}", file=sys.stderr)
        return 2


def _user_facing(exc: Exception) -> bool:
    """Errors whose message is written for the user. ModelError is looked up, not imported: a model
    error implies app.models is loaded, and importing it here would load torch for every command."""
    if isinstance(exc, UsageError | ValueError):
        return True
    errors = sys.modules.get("app.errors")
    return errors is not None and isinstance(exc, errors.ModelError)
