"""Start-up time as a user sees it: separate launches of the desktop app (offscreen), each timed from
process start to each stage (app/startup_trace.py: Python + Qt imported, window painted, torch, transformers
and SpecLens's loading code imported, tokenizer and weights loaded, drafter chosen, ready to chat). The app prints
the marks when SPECLENS_STARTUP_TRACE is set. The first launch may pay one-off costs (GGUF conversion,
drafter timing); later ones are second launches."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from app.startup_trace import CPU, STAGE_NAMES, STAGES


def launch_command() -> list[str]:
    if getattr(sys, "frozen", False):  # the packaged app is its own interpreter
        return [sys.executable, "gui"]
    return [sys.executable, "-m", "app", "gui"]


def measure_startup(launches: int, target: str, draft: str, log: Callable[[str], None]) -> dict:
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="speclens-startup-") as data_dir:
        cmd = launch_command() + ["--target", target, "--draft", draft, "--data-dir", data_dir]
        env = dict(os.environ, SPECLENS_STARTUP_TRACE="1", QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"))
        for i in range(launches):
            start = time.perf_counter()
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900).stdout
            marks = stage_marks(out)
            if "ready" not in marks:
                raise RuntimeError(f"launch {i + 1} did not become ready: {out.strip()[-300:]}")
            cpu = marks.pop(CPU, None)
            run = {"window_s": marks["window"], "ready_s": marks["ready"], "cpu_s": cpu, "stages": marks,
                   "exit_s": round(time.perf_counter() - start, 3)}
            runs.append(run)
            log(f"launch {i + 1}/{launches}: window {run['window_s']:.2f} s, ready {run['ready_s']:.2f} s")
    later = runs[1:] or runs
    stages = {s: statistics.median(r["stages"][s] for r in later) for s in STAGES if all(s in r["stages"] for r in later)}
    return {"command": " ".join(cmd[:-2]), "runs": runs,
            "second_launch": {"window_s": statistics.median(r["window_s"] for r in later),
                              "ready_s": statistics.median(r["ready_s"] for r in later),
                              "cpu_s": statistics.median(r["cpu_s"] for r in later), "stages": stages},
            "load_average": os.getloadavg()}


def stage_marks(out: str) -> dict[str, float]:
    """{stage: seconds from process start} from the app's `startup: <stage> <seconds>` lines."""
    marks = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "startup:" and (parts[1] in STAGES or parts[1] == CPU):
            marks[parts[1]] = float(parts[2])
    return marks


def markdown(r: dict) -> str:
    rows = [f"| {i + 1} | {x['window_s']:.2f} | {x['ready_s']:.2f} | {x['cpu_s']:.2f} |" for i, x in enumerate(r["runs"])]
    s = r["second_launch"]
    # The background import overlaps the window, so a stage's own cost is its time after the stage
    # reached just before it, in the order reached.
    order = sorted(s["stages"].items(), key=lambda kv: kv[1])
    stage_rows = [f"| {STAGE_NAMES[name]} | {t:.2f} | {t - (order[i - 1][1] if i else 0.0):+.2f} |"
                  for i, (name, t) in enumerate(order)]
    return "\n".join([
        "# Start-up", "", "Seconds from process start (offscreen window).", "",
        "| launch | window painted | ready to chat | CPU seconds by ready |", "|---|---|---|---|", *rows, "",
        f"Second launch (median of launches 2..): window {s['window_s']:.2f} s, ready {s['ready_s']:.2f} s, "
        f"{s['cpu_s']:.2f} CPU seconds by ready (what other work on the machine does not stretch). "
        f"Load average at the end: {', '.join(f'{x:.2f}' for x in r['load_average'])}.", "",
        "Stages of a second launch (median), in the order reached:", "",
        "| stage | reached at (s) | after the one before (s) |", "|---|---|---|", *stage_rows, "",
    ])
