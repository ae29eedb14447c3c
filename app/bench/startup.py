"""Start-up time as a user sees it: separate launches of the desktop app (offscreen), each timed from
process start to the window's first paint and to ready (models loaded, Send enabled). The app prints
both when SPECLENS_STARTUP_TRACE is set (app/gui/app.py). The first launch may pay one-off costs
(GGUF conversion, drafter timing); later ones are second launches."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable


def launch_command() -> list[str]:
    if getattr(sys, "frozen", False):  # the packaged app is its own interpreter
        return [sys.executable, "gui"]
    return [sys.executable, "-m", "app", "gui"]


def measure_startup(launches: int, target: str, draft: str, log: Callable[[str], None]) -> dict:
    runs = []
    with tempfile.TemporaryDirectory(prefix="speclens-startup-") as data_dir:
        cmd = launch_command() + ["--target", target, "--draft", draft, "--data-dir", data_dir]
        env = dict(os.environ, SPECLENS_STARTUP_TRACE="1", QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        for i in range(launches):
            start = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900).stdout
            marks = dict(line.split()[1:3] for line in out.splitlines() if line.startswith("startup: "))
            if "ready" not in marks:
                raise RuntimeError(f"launch {i + 1} did not become ready: {out.strip()[-300:]}")
            run = {"window_s": float(marks["window"]), "ready_s": float(marks["ready"]),
                   "exit_s": round(time.perf_counter() - start, 3)}
            runs.append(run)
            log(f"launch {i + 1}/{launches}: window {run['window_s']:.2f} s, ready {run['ready_s']:.2f} s")
    later = runs[1:] or runs
    return {"command": " ".join(cmd[:-2]), "runs": runs,
            "second_launch": {"window_s": statistics.median(r["window_s"] for r in later),
                              "ready_s": statistics.median(r["ready_s"] for r in later)},
            "load_average": os.getloadavg()}


def markdown(r: dict) -> str:
    rows = [f"| {i + 1} | {x['window_s']:.2f} | {x['ready_s']:.2f} |" for i, x in enumerate(r["runs"])]
    s = r["second_launch"]
    return "\n".join([
        "# Start-up", "", "Seconds from process start (offscreen window).", "",
        "| launch | window painted | ready to chat |", "|---|---|---|", *rows, "",
        f"Second launch (median of launches 2..): window {s['window_s']:.2f} s, ready {s['ready_s']:.2f} s. "
        f"Load average at the end: {', '.join(f'{x:.2f}' for x in r['load_average'])}.", "",
    ])
