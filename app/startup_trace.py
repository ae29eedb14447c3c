"""Start-up stage marks: with SPECLENS_STARTUP_TRACE set, each stage prints `startup: <stage> <seconds>`
(seconds from process start, any thread); `speclens bench --startup` reads them. No Qt and no torch here."""

from __future__ import annotations

import os
import sys
import threading
import time

STARTUP_TRACE = "SPECLENS_STARTUP_TRACE"
# In the order a launch normally reaches them; the preload and the window overlap, so times need not rise.
STAGES = ("qt", "window", "torch", "transformers", "classes", "tokenizer", "weights", "drafter", "ready")
STAGE_NAMES = {
    "qt": "Python + Qt imported", "window": "window painted", "torch": "torch imported",
    "transformers": "transformers imported", "classes": "loading code imported", "tokenizer": "tokenizer loaded",
    "weights": "weights loaded", "drafter": "drafter chosen", "ready": "ready to chat",
}
# CPU seconds this process had used when ready (all threads): on a machine other work keeps busy, the
# wall-clock stages stretch, while this stays near what an idle machine would take (the GIL serialises most).
CPU = "cpu"
_seen: set[str] = set()
_lock = threading.Lock()


def enabled() -> bool:
    return bool(os.environ.get(STARTUP_TRACE))


def since_start() -> float:
    """Seconds since this process was created (the interpreter's own start-up included). On Linux from the
    kernel's start tick: psutil's create_time adds the boot time rounded to whole seconds, 0.77 s off here."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime, after the command name
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        import psutil

        return time.time() - psutil.Process().create_time()


def mark(stage: str) -> None:
    """Print the first time a stage is reached; later loads (a draft swap) are not start-up."""
    if not enabled():
        return
    with _lock:
        if stage in _seen:
            return
        _seen.add(stage)
    line = f"startup: {stage} {since_start():.3f}\n"
    if stage == "ready":
        line += f"startup: {CPU} {time.process_time():.3f}\n"
    sys.stdout.write(line)
    sys.stdout.flush()


# A target's LoadProgress stage (app/models/progress.py) that begins once an earlier start-up stage is done.
_ENDS = {"convert": "tokenizer", "weights": "tokenizer", "device": "weights", "done": "weights"}


def mark_load_stage(stage: str) -> None:
    """Called with each LoadProgress stage of the target's load as it begins."""
    if stage in _ENDS:
        mark(_ENDS[stage])
