"""The target-only step of the real decoding loop: seconds per token of plain decoding, sampling included.

It is the base of every measured speedup (the server's, a recording's) and the machine profile's
reference for live rounds (live_check.py): a round's verify time is what this loop spends, so it is
compared against this, not against the bare forward pass that v(n) times. BASELINE_STEPS rounds after
the prefill round, which warms the cache and is left out; EOS does not end it. Both the speedup baseline
and the profile's reference are their median: a step that shared the cores with other work (the window
building its plots, another program) only reads slower, and in the mean three such steps of six read a
6 ms step as 20 ms and a 1x answer as 6x. No Qt.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported by the server and the recorder before torch is needed
    import torch

BASELINE_PROMPT = "Say hello."  # what the server and a chat without its own prompt time on
BASELINE_STEPS = 6  # as many as the window times before a message


def target_steps(target, ids: torch.Tensor, params, *, steps: int = BASELINE_STEPS, static=None,
                 cancel=None) -> list[float]:
    """Seconds of each target-only round after `ids` (a LoadedModel's prompt), under `params` (their
    sampling settings; seed 0), the prefill round left out; fewer when cancelled."""
    from app.engine import RoundEvent, decode

    quick = replace(params, max_new_tokens=steps + 1, seed=0)
    return [
        e.verify_time
        for e in decode(target.model, ids, None, quick, stop_token_ids=(), vocab_size=target.vocab_size,
                        static=static, cancel=cancel)
        if isinstance(e, RoundEvent) and e.round > 0
    ]


def time_target_steps(target, ids: torch.Tensor, params, **kwargs) -> float | None:
    """The speedup baseline: the median of target_steps (seconds a token); None if none ran."""
    times = target_steps(target, ids, params, **kwargs)
    return statistics.median(times) if times else None
