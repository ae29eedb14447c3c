"""The target-only step: seconds per token of plain decoding, the base of the measured speedup."""

from __future__ import annotations

from dataclasses import replace

BASELINE_PROMPT = "Say hello."
BASELINE_STEPS = 6  # as many as the window times before a message


def time_target_step(pair, steps: int = BASELINE_STEPS) -> float | None:
    """Mean target-only step after a short chat prompt, the prefill round left out; None if none ran."""
    from app.engine import RoundEvent, decode

    target = pair.target
    ids = target.encode_chat([{"role": "user", "content": BASELINE_PROMPT}])
    params = replace(pair.params, max_new_tokens=steps + 1, seed=0)
    times = [
        e.verify_time
        for e in decode(target.model, ids, None, params, stop_token_ids=(), vocab_size=target.vocab_size,
                        static=pair.static)
        if isinstance(e, RoundEvent) and e.round > 0
    ]
    return sum(times) / len(times) if times else None
