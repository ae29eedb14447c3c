"""A GUI soak: many messages in one session of the real main window (offscreen), as a user sends them.

What is measured, all in one run:
- GUI-thread stalls: a 5 ms timer on the GUI thread; each gap between its ticks beyond the interval is
  time the window could not react. p50, p99 and the maximum over every gap while answers stream.
- Memory: resident set size after the first answer (models loaded, caches warm) and after the last.
- Python object health: the reference count of None per message (a binding that drops references
  to None aborts a long session under Python 3.11; see tests/gui/test_binding_refcounts.py).
Models load through the window's own loader, so this is the path a user takes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable

import psutil

QUESTIONS = [
    "Name three colours.", "What is a prime number?", "Write a haiku about rain.",
    "Give me two tips for sleeping well.", "What does a compiler do?", "Why is the sky blue?",
    "List four fruits.", "Explain photosynthesis in one sentence.", "What is the capital of France?",
    "Summarise what you said so far in one line.",
]
TICK_MS = 5


class StallMeter:
    """Gaps between ticks of a TICK_MS timer on the GUI thread, minus the interval."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.gaps: list[float] = []
        self.last = time.perf_counter()
        self.timer = QTimer(interval=TICK_MS, timeout=self._tick)

    def start(self) -> None:
        self.last = time.perf_counter()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    def _tick(self) -> None:
        now = time.perf_counter()
        self.gaps.append(max(0.0, now - self.last - TICK_MS / 1000))
        self.last = now


def run_soak(target: str, draft: str, messages: int, max_new_tokens: int, log: Callable[[str], None]) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory(prefix="speclens-soak-") as data_dir:
        os.environ["SPECLENS_DATA_DIR"] = data_dir  # the soak's history and settings stay out of the user's
        return _soak(target, draft, messages, max_new_tokens, log)


def _wait(app, condition: Callable[[], bool], timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the window did not finish in time")
        app.processEvents()
        time.sleep(0.002)


def _soak(target: str, draft: str, messages: int, max_new_tokens: int, log: Callable[[str], None]) -> dict:
    from PySide6.QtWidgets import QApplication

    from app.gui.main_window import MainWindow

    app = QApplication.instance() or QApplication([])
    process = psutil.Process()
    rss_start = process.memory_info().rss
    window = MainWindow(target_spec=target, draft_spec=draft)
    window.resize(1400, 900)
    window.show()
    log(f"loading {target} with draft {draft} through the window ...")
    _wait(app, lambda: window.model.target is not None and not window.model.loading or window.status.banner.isVisible(), 900)
    if window.model.target is None:
        raise RuntimeError(window.status.banner.text())
    window.controls.max_new.setValue(max_new_tokens)
    meter = StallMeter()
    per_message, rss_first, none_first = [], None, None
    for i in range(messages):
        window.input.setPlainText(QUESTIONS[i % len(QUESTIONS)])
        start = time.perf_counter()
        meter.start()
        window.chat_flow.send()
        _wait(app, lambda: not window.model.generating, 600)
        meter.stop()
        seconds = time.perf_counter() - start
        answer = window.conversation.messages[-1]
        tokens = answer.stats.get("new_tokens") or 0
        per_message.append({"seconds": round(seconds, 2), "tokens": tokens,
                            "finish": answer.stats.get("finish_reason")})
        if i == 0:
            rss_first, none_first = process.memory_info().rss, sys.getrefcount(None)
        log(f"message {i + 1}/{messages}: {tokens} tokens in {seconds:.1f} s")
    rss_last, none_last = process.memory_info().rss, sys.getrefcount(None)
    assert rss_first is not None and none_first is not None  # read after the first message
    saved = len(window.store.messages(window.conversation.conv_id)) if window.conversation.conv_id is not None else 0
    window.close()
    app.processEvents()
    gaps = sorted(meter.gaps)

    def pct(q: float) -> float:
        return gaps[min(len(gaps) - 1, int(q * len(gaps)))] * 1000 if gaps else 0.0

    mib = 2**20
    return {
        "target": target, "draft": draft, "messages": messages, "max_new_tokens": max_new_tokens,
        "tokens": sum(m["tokens"] for m in per_message), "saved_messages": saved,
        "stall_ms": {"p50": round(pct(0.50), 2), "p99": round(pct(0.99), 2), "max": round(pct(1.0), 2),
                     "ticks": len(gaps)},
        "rss_mib": {"before_window": round(rss_start / mib, 1), "after_first": round(rss_first / mib, 1),
                    "after_last": round(rss_last / mib, 1),
                    "growth_after_first": round((rss_last - rss_first) / mib, 1)},
        "none_refs_per_message": round((none_last - none_first) / max(1, messages - 1), 1),
        "per_message": per_message, "load_average": os.getloadavg(),
    }


def markdown(r: dict) -> str:
    s, m = r["stall_ms"], r["rss_mib"]
    return "\n".join([
        f"# GUI soak: {r['messages']} messages in one session",
        "",
        f"Target `{r['target']}`, draft `{r['draft']}`, up to {r['max_new_tokens']} new tokens each: "
        f"{r['tokens']} tokens streamed, {r['saved_messages']} messages in the history afterwards.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| GUI-thread stall p50 / p99 / max | {s['p50']:.1f} / {s['p99']:.1f} / {s['max']:.1f} ms "
        f"({s['ticks']} ticks of {TICK_MS} ms) |",
        f"| RSS after the first answer → after the last | {m['after_first']:.0f} → {m['after_last']:.0f} MiB "
        f"({m['growth_after_first']:+.1f} MiB) |",
        f"| references to None per message | {r['none_refs_per_message']:+.1f} |",
        f"| load average (1, 5, 15 min) at the end | {', '.join(f'{x:.2f}' for x in r['load_average'])} |",
        "",
    ])
