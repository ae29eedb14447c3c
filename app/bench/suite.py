"""The benchmark proper: every configuration on every prompt, interleaved within each repeat.

Repeat r runs prompt 1 through all configurations, then prompt 2, and so on, so slow drift
of the machine (other processes, thermal state) lands on every configuration alike; speedups
and ratios are taken within a repeat, then the median over repeats is reported.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass

import torch

from app.engine import DecodeParams
from app.engine.stats import acceptance_histogram, alpha_estimate, predicted_speedup

from .costs import StepCosts, measure_costs
from .prompts import BenchPrompt
from .runners import MODEL_DRAFT, PROMPT_LOOKUP, TARGET_ONLY, Config, Pair, Run, configs_for, run_config

WARMUP_TOKENS = 8
Log = Callable[[str], None]


@dataclass(slots=True)
class Setting:
    """One sampling setting (greedy or a temperature) and everything measured under it."""

    params: DecodeParams
    configs: list[Config]
    costs: dict[str, StepCosts]  # per prompt id
    runs: dict[tuple[str, str], list[Run]]  # (config name, prompt id) -> one Run per repeat

    @property
    def label(self) -> str:
        return "greedy" if self.params.greedy else f"T={self.params.temperature:g}"


def encode_prompts(pair: Pair, prompts: list[BenchPrompt]) -> dict[str, torch.Tensor]:
    """The chat template applied once; SpecLens and HF receive these very ids."""
    return {p.id: pair.target.encode_chat(list(p.messages)) for p in prompts}


def run_setting(
    pair: Pair, prompts: list[BenchPrompt], params: DecodeParams, repeats: int,
    configs: list[Config] | None = None, log: Log = lambda _: None,
) -> Setting:
    configs = configs or configs_for(pair.draft_model is not None)
    ids = encode_prompts(pair, prompts)
    warm = dataclasses.replace(params, max_new_tokens=min(WARMUP_TOKENS, params.max_new_tokens))
    for config in configs:  # first calls pay for kernel selection and allocator growth
        run_config(pair, config, ids[prompts[0].id], warm)
    draft = pair.draft_model if any(c.mode == MODEL_DRAFT for c in configs) else None
    costs = {p.id: measure_costs(pair.target.model, draft, ids[p.id], params.gamma) for p in prompts}
    runs: dict[tuple[str, str], list[Run]] = {(c.name, p.id): [] for c in configs for p in prompts}
    for r in range(repeats):
        for p in prompts:
            for config in configs:
                run = run_config(pair, config, ids[p.id], params)
                runs[config.name, p.id].append(run)
                log(f"  [{r + 1}/{repeats}] {p.id:<10} {config.name:<24} {len(run.tokens):4d} tok "
                    f"{run.tokens_per_second:7.1f} tok/s")
    return Setting(params, configs, costs, runs)


def baseline_for(config: Config) -> Config:
    return Config(config.engine, TARGET_ONLY)


def _per_repeat_tps(setting: Setting, config: Config) -> list[float]:
    """Tokens/s over the whole suite, per repeat: total tokens / total seconds."""
    prompt_ids = sorted({pid for _, pid in setting.runs})
    repeats = len(setting.runs[config.name, prompt_ids[0]])
    out = []
    for r in range(repeats):
        runs = [setting.runs[config.name, pid][r] for pid in prompt_ids]
        out.append(sum(len(x.tokens) for x in runs) / sum(x.seconds for x in runs))
    return out


def _paired_ratio(setting: Setting, a: Config, b: Config) -> float:
    """Median over repeats of tokens/s(a) / tokens/s(b), taken within each repeat."""
    ta, tb = _per_repeat_tps(setting, a), _per_repeat_tps(setting, b)
    return statistics.median(x / y for x, y in zip(ta, tb, strict=True))


def summarize_setting(setting: Setting) -> dict:
    """JSON-ready rows, one per configuration, and the SpecLens/HF ratios."""
    gamma = setting.params.gamma
    c = statistics.median(k.c for k in setting.costs.values())
    verify_cost = statistics.median(k.verify_cost for k in setting.costs.values())
    rows = []
    for config in setting.configs:
        tps = _per_repeat_tps(setting, config)
        all_runs = [run for (name, _), runs in setting.runs.items() if name == config.name for run in runs]
        rounds = [rd for run in all_runs for rd in (run.rounds or [])]
        drafted_rounds = [rd for rd in rounds if rd.drafted]
        speedup = _paired_ratio(setting, config, baseline_for(config))
        alpha = alpha_estimate(rounds) if rounds else None
        row = {
            "config": config.name, "engine": config.engine, "mode": config.mode,
            "tokens_per_second": {"median": statistics.median(tps), "min": min(tps), "max": max(tps),
                                  "per_repeat": tps},
            "new_tokens": sum(len(run.tokens) for run in all_runs),
            "speedup": speedup,
            "alpha": alpha,
            "rounds": len(rounds) if rounds else None,
            "drafted_rounds": len(drafted_rounds) if rounds else None,
            "mean_accepted": (sum(rd.accepted for rd in drafted_rounds) / len(drafted_rounds)
                              if drafted_rounds else None),
            "acceptance_histogram": acceptance_histogram(rounds, gamma) if rounds else None,
            "peak_memory_mib": max(run.peak_mib for run in all_runs),
            "c": None, "verify_cost": None, "predicted_speedup": None, "efficiency": None,
        }
        if config.mode == MODEL_DRAFT:
            row |= {"c": c, "verify_cost": verify_cost}
            if alpha is not None:
                predicted = predicted_speedup(alpha, gamma, c, verify_cost)
                row |= {"predicted_speedup": predicted, "efficiency": speedup / predicted}
        rows.append(row)
    names = {cfg.name for cfg in setting.configs}
    ratios = {}
    for mode, key in ((TARGET_ONLY, "target_only"), (MODEL_DRAFT, "speculative"), (PROMPT_LOOKUP, "prompt_lookup")):
        a, b = Config("speclens", mode), Config("hf", mode)
        if a.name in names and b.name in names:
            ratios[f"speclens_over_hf_{key}"] = _paired_ratio(setting, a, b)
    return {
        "setting": setting.label,
        "params": dataclasses.asdict(setting.params),
        "costs": {pid: k.to_json() for pid, k in setting.costs.items()},
        "configs": rows,
        "ratios": ratios,
        "outputs": {  # config -> prompt id -> token ids per repeat
            cfg.name: {pid: [run.tokens for run in runs] for (name, pid), runs in setting.runs.items()
                       if name == cfg.name}
            for cfg in setting.configs
        },
    }
