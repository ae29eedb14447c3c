"""Held-out evaluation through the real engine: per-position acceptance at T = 0 and T = 0.7, α, c and v.

Each held-out prompt is answered by target-only decoding and by speculative decoding with the draft,
interleaved, so c (draft time per drafted token ÷ target step) and v (verify time ÷ target step) are
ratios taken in one run on this machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from app.engine import DecodeParams, generate
from app.engine.stats import alpha_from_acceptances, per_position_acceptance, predicted_speedup

TEMPERATURES = (0.0, 0.7)


def evaluate(target, drafter, prompts: list[str], *, gamma: int = 4, max_new_tokens: int = 48, seed: int = 0,
             deadline: float | None = None, min_prompts: int = 3,
             on_prompt: Callable[[int, int], None] = lambda done, total: None) -> dict:
    """target: a LoadedModel. Stops early at `deadline` (perf_counter) once min_prompts ran per temperature."""
    per_temp: dict[str, dict] = {}
    target_step: list[float] = []  # seconds per target-only token after the prefill
    draft_time = drafted = verify_time = verify_rounds = 0.0
    total = len(prompts) * len(TEMPERATURES)
    done = 0
    for temperature in TEMPERATURES:
        rounds = []
        n_prompts = 0
        for i, prompt in enumerate(prompts):
            if deadline is not None and i >= min_prompts and time.perf_counter() > deadline:
                break
            ids = target.encode_chat([{"role": "user", "content": prompt}])
            params = DecodeParams(gamma=gamma, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed + i)
            kwargs = {"stop_token_ids": target.stop_token_ids, "vocab_size": target.vocab_size}
            base = generate(target.model, ids, None, params, **kwargs)
            target_step += [r.verify_time for r in base.rounds[1:]]
            spec = generate(target.model, ids, drafter, params, **kwargs)
            rounds += spec.rounds
            for r in spec.rounds:
                draft_time += r.draft_time
                drafted += r.drafted
                if r.drafted == gamma:
                    verify_time += r.verify_time
                    verify_rounds += 1
            n_prompts += 1
            done += 1
            on_prompt(done, total)
        label = "greedy" if temperature == 0 else f"T={temperature:g}"
        per_temp[label] = {
            "temperature": temperature,
            "prompts": n_prompts,
            "rounds": len(rounds),
            "per_position_acceptance": per_position_acceptance(rounds, gamma),
            "alpha": alpha_from_acceptances(rounds),
            "tokens_per_round": sum(r.emitted for r in rounds) / len(rounds) if rounds else None,
        }
    step = sorted(target_step)[len(target_step) // 2] if target_step else None
    c = (draft_time / drafted) / step if step and drafted else None
    v = (verify_time / verify_rounds) / step if step and verify_rounds else None
    summary = {
        "alpha_greedy": per_temp["greedy"]["alpha"],
        "alpha_sampled": per_temp["T=0.7"]["alpha"],
        "c": c,
        "v": v,
        "gamma": gamma,
        "target_step_ms": step * 1000 if step else None,
    }
    if c is not None and v is not None:
        # v was measured at this gamma only; it is used as the verify cost for every gamma (optimistic above it).
        summary["predicted_speedup"] = {
            label: {str(g): round(predicted_speedup(t["alpha"] or 0.0, g, c, v), 3) for g in (1, 2, 3, 4, 5)}
            for label, t in per_temp.items()
        }
    return {"summary": summary, "by_temperature": per_temp, "max_new_tokens": max_new_tokens}
