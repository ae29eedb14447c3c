"""The server's target-only step: the speedup baseline (app.machine.baseline) on a short chat prompt."""

from __future__ import annotations

from app.machine.baseline import BASELINE_PROMPT, time_target_steps


def time_target_step(pair) -> float | None:
    """Mean target-only step after a short chat prompt, on the pair's cache path; None if none ran."""
    target = pair.target
    ids = target.encode_chat([{"role": "user", "content": BASELINE_PROMPT}])
    return time_target_steps(target, ids, pair.params, static=pair.static)
