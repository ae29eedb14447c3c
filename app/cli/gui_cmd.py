"""`speclens` / `speclens gui`: the desktop app."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("gui", help="open the desktop app (the default when no subcommand is given)")
    p.add_argument("--target", default=None, help="target model spec (default: the last used, first run 'default')")
    p.add_argument("--draft", default=None, help="draft spec: 'self', 'prompt-lookup', 'none' or a model (default: the last used)")
    p.add_argument("--data-dir", default=None, help="folder for the history database and settings")
    p.add_argument("--presentation", action="store_true", help="start in presentation mode (F5 toggles, Esc leaves)")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from app.gui.app import GuiOptions
    from app.gui.app import run as run_gui

    return run_gui(GuiOptions(target=args.target, draft=args.draft, data_dir=args.data_dir,
                              presentation=args.presentation))
