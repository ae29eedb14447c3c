"""`speclens replay demo.speclens`: open the window and play a recording. Loads no model."""

from __future__ import annotations

import argparse


def add_parser(sub) -> None:
    p = sub.add_parser("replay", help="open the window and play a recording (no model or GPU needed)")
    p.add_argument("recording", help="a .speclens file written by `speclens record` or File → Save recording")
    p.add_argument("--presentation", action="store_true", help="start in presentation mode (full screen)")
    p.add_argument("--speed", type=float, default=1.0, choices=(0.5, 1.0, 2.0, 4.0))
    p.add_argument("--data-dir", default=None, help="folder for the history database and settings")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from app.recording import read

    recording = read(Path(args.recording))  # a bad file ends here with its one-line message
    from app.gui.app import GuiOptions
    from app.gui.app import run as run_gui

    return run_gui(GuiOptions(data_dir=args.data_dir, replay=recording, replay_name=Path(args.recording).name,
                              presentation=args.presentation, speed=args.speed))
