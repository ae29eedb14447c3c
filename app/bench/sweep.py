"""γ sweep: measured against predicted speedup for one pair, SpecLens target-only as the baseline."""

from __future__ import annotations

import dataclasses
import statistics
from typing import Any

from app.engine import DecodeParams
from app.engine.params import GAMMA_LIMIT
from app.engine.stats import alpha_estimate, predicted_speedup

from .costs import measure_costs
from .prompts import BenchPrompt
from .runners import MODEL_DRAFT, TARGET_ONLY, Config, Pair, Run, run_config
from .suite import WARMUP_TOKENS, Log, encode_prompts


def parse_gammas(text: str) -> list[int]:
    try:
        gammas = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise ValueError(f"--sweep takes comma-separated integers like 1,2,4,8, got {text!r}") from None
    if not gammas:
        raise ValueError("--sweep needs at least one gamma")
    for g in gammas:
        if g < 1:  # a sweep compares drafting: γ 0 is target-only, its baseline
            raise ValueError(f"gamma must be between 1 and {GAMMA_LIMIT}, got {g}")
        DecodeParams(gamma=g)  # same upper bound as everywhere else
    return gammas


def _tps(runs: list[Run]) -> float:
    return sum(len(r.tokens) for r in runs) / sum(r.seconds for r in runs)


def run_sweep(
    pair: Pair, prompts: list[BenchPrompt], params: DecodeParams, gammas: list[int], repeats: int,
    log: Log = lambda _: None,
) -> dict:
    ids = encode_prompts(pair, prompts)
    base, spec = Config("speclens", TARGET_ONLY), Config("speclens", MODEL_DRAFT)
    at = {g: dataclasses.replace(params, gamma=g) for g in gammas}
    warm = dataclasses.replace(params, max_new_tokens=min(WARMUP_TOKENS, params.max_new_tokens))
    for config in (base, spec):
        run_config(pair, config, ids[prompts[0].id], warm)
    costs = {g: [measure_costs(pair.target.model, pair.draft_model, ids[p.id], g, static=pair.static) for p in prompts] for g in gammas}
    base_runs: list[list[Run]] = [[] for _ in range(repeats)]
    spec_runs: dict[int, list[list[Run]]] = {g: [[] for _ in range(repeats)] for g in gammas}
    for r in range(repeats):
        for p in prompts:
            base_runs[r].append(run_config(pair, base, ids[p.id], params))
            for g in gammas:
                run = run_config(pair, spec, ids[p.id], at[g])
                spec_runs[g][r].append(run)
                log(f"  [{r + 1}/{repeats}] {p.id:<10} gamma={g:<2} {run.tokens_per_second:7.1f} tok/s")
    base_tps = [_tps(runs) for runs in base_runs]
    all_rounds = [rd for g in gammas for runs in spec_runs[g] for run in runs for rd in run.rounds or ()]
    alpha = alpha_estimate(all_rounds) or 0.0  # one pair, one setting: alpha does not depend on gamma; none drafted: 0
    c = statistics.median(k.c for g in gammas for k in costs[g])
    points: list[dict[str, Any]] = []
    for g in gammas:
        tps = [_tps(runs) for runs in spec_runs[g]]
        verify_cost = statistics.median(k.verify_cost for k in costs[g])
        rounds = [rd for runs in spec_runs[g] for run in runs for rd in run.rounds or ()]
        points.append({
            "gamma": g,
            "tokens_per_second": statistics.median(tps),
            "speedup": statistics.median(a / b for a, b in zip(tps, base_tps, strict=True)),
            "alpha": alpha_estimate(rounds),
            "verify_cost": verify_cost,
            "predicted_speedup": predicted_speedup(alpha, g, c, verify_cost),
        })
    return {
        "setting": "greedy" if params.greedy else f"T={params.temperature:g}",
        "baseline_tokens_per_second": statistics.median(base_tps),
        "alpha": alpha,
        "c": c,
        "points": points,
        "best_gamma_measured": max(points, key=lambda p: p["speedup"])["gamma"],
        "best_gamma_predicted": max(points, key=lambda p: p["predicted_speedup"])["gamma"],
    }
