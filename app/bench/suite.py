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
from typing import Any

import torch

from app.engine import DecodeParams
from app.engine.stats import acceptance_histogram, alpha_estimate, per_position_acceptance, predicted_speedup

from .costs import StepCosts, measure_costs
from .prompts import BenchPrompt
from .runners import (
    AUTO,
    HF_DEFAULTS,
    LLAMA_CPP,
    LLAMA_CPP_BIN,
    MODEL_DRAFT,
    PROMPT_LOOKUP,
    TARGET_ONLY,
    TRAINED,
    Config,
    Pair,
    Run,
    pair_configs,
    run_config,
)

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
    configs = configs or pair_configs(pair)
    ids = encode_prompts(pair, prompts)
    warm = dataclasses.replace(params, max_new_tokens=min(WARMUP_TOKENS, params.max_new_tokens))
    for config in configs:  # first calls pay for kernel selection and allocator growth
        run_config(pair, config, ids[prompts[0].id], warm)
    draft = pair.draft_model if any(c.mode in (MODEL_DRAFT, HF_DEFAULTS) for c in configs) else None
    costs = {p.id: measure_costs(pair.target.model, draft, ids[p.id], params.gamma, static=pair.static)
             for p in prompts}
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
    return Config(config.engine, TARGET_ONLY)  # HF's: fp32, as HF loads a model on a CPU


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


def _target_step(setting: Setting) -> float | None:
    """Median seconds of one SpecLens target-only step over the setting (prefill rounds excluded)."""
    steps = [run.target_step for (name, _), runs in setting.runs.items()
             if name == Config("speclens", TARGET_ONLY).name for run in runs if run.target_step]
    return statistics.median(steps) if steps else None


def best_hf(setting: Setting) -> Config | None:
    """The fastest Hugging Face configuration measured in this setting (median tokens/s over repeats)."""
    hf = [c for c in setting.configs if c.engine == "hf"]
    return max(hf, key=lambda c: statistics.median(_per_repeat_tps(setting, c)), default=None)


def summarize_setting(setting: Setting, llama_costs: dict | None = None) -> dict:
    """JSON-ready rows, one per configuration, and the SpecLens/HF ratios. llama_costs: llama.cpp's c and v(n)
    from llama-bench (llama_cpp_cli.costs), for its draft-model row."""
    gamma = setting.params.gamma
    c = statistics.median(k.c for k in setting.costs.values())
    verify_cost = statistics.median(k.verify_cost for k in setting.costs.values())
    step = _target_step(setting)
    top_hf = best_hf(setting)
    rows = []
    for config in setting.configs:
        tps = _per_repeat_tps(setting, config)
        all_runs = [run for (name, _), runs in setting.runs.items() if name == config.name for run in runs]
        rounds = [rd for run in all_runs for rd in (run.rounds or [])]
        drafted_rounds = [rd for rd in rounds if rd.drafted]
        speedup = _paired_ratio(setting, config, baseline_for(config))
        alpha = alpha_estimate(rounds) if rounds else None
        row_gamma = max((rd.gamma for rd in rounds), default=gamma) if config.mode == AUTO else gamma
        row: dict[str, Any] = {
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
            "acceptance_histogram": acceptance_histogram(rounds, row_gamma) if rounds else None,
            "per_position_acceptance": per_position_acceptance(rounds, row_gamma) if rounds else None,
            "gammas": _gamma_counts(rounds) if config.mode == AUTO and rounds else None,
            "peak_memory_mib": max((run.peak_mib for run in all_runs if run.peak_mib is not None), default=None),
            "c": None, "verify_cost": None, "predicted_speedup": None, "efficiency": None,
            "ratio_to_best_hf": _paired_ratio(setting, config, top_hf) if top_hf is not None else None,
            "gamma": None, "verify_n": None, "tokens_per_round": None,
        }
        if rounds:
            row["tokens_per_round"] = row["new_tokens"] / len(rounds)
            row["gamma"] = statistics.median_low([rd.gamma for rd in rounds]) if config.mode == AUTO else gamma
        if config.engine == LLAMA_CPP_BIN:
            row |= llama_bin_row(all_runs, config.mode, llama_costs)
        elif config.mode == MODEL_DRAFT:
            row |= {"c": c, "verify_cost": verify_cost, "verify_n": gamma + 1}
        elif drafted_rounds and step:  # c from the runs themselves: draft seconds per token / target step
            row["c"] = sum(rd.draft_time for rd in drafted_rounds) / sum(rd.drafted for rd in drafted_rounds) / step
            if config.mode in (TRAINED, PROMPT_LOOKUP):
                row |= {"verify_cost": verify_cost, "verify_n": gamma + 1}
            elif config.mode == AUTO:  # v(n) from its own rounds: a round's verify ÷ a target step, at its median n
                row["verify_cost"] = statistics.median(rd.verify_time for rd in drafted_rounds) / step
                row["verify_n"] = statistics.median_low([rd.drafted for rd in drafted_rounds]) + 1
        if config.mode in (MODEL_DRAFT, TRAINED) and alpha is not None and row["c"] is not None:
            predicted = predicted_speedup(alpha, gamma, row["c"], verify_cost)
            row |= {"predicted_speedup": predicted, "efficiency": speedup / predicted}
        rows.append(row)
    names = {cfg.name for cfg in setting.configs}
    ratios: dict[str, Any] = {}
    for mode, key in ((TARGET_ONLY, "target_only"), (MODEL_DRAFT, "speculative"), (PROMPT_LOOKUP, "prompt_lookup")):
        a, b = Config("speclens", mode), Config("hf", mode)
        if a.name in names and b.name in names:
            ratios[f"speclens_over_hf_{key}"] = _paired_ratio(setting, a, b)
    if top_hf is not None:
        ratios["best_hf"] = top_hf.name
        speclens = [cfg for cfg in setting.configs if cfg.engine == "speclens"]
        best = max(speclens, key=lambda cfg: statistics.median(_per_repeat_tps(setting, cfg)))
        ratios["best_speclens"] = best.name
        ratios["best_speclens_over_best_hf"] = _paired_ratio(setting, best, top_hf)
        if Config("speclens", AUTO).name in names:
            ratios["speclens_auto_over_best_hf"] = _paired_ratio(setting, Config("speclens", AUTO), top_hf)
    ratios |= llama_cpp_ratios(setting, names)
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


def llama_bin_row(runs: list[Run], mode: str, costs: dict | None) -> dict:
    """llama.cpp binaries' row fields from their counts: α as llama.cpp counts it (accepted ÷ drafted), tokens a
    round (every round yields its accepted drafts and one target token), γ its draft maximum (drafting stops
    earlier below p-min); c and v(n) from llama-bench (`costs`) for the draft-model row."""
    if mode != MODEL_DRAFT:
        return {}
    counts = [run.counts for run in runs if run.counts]
    drafted, accepted = sum(k["drafted"] for k in counts), sum(k["accepted"] for k in counts)
    tokens, rounds = sum(k["tokens"] for k in counts), sum(k["rounds"] for k in counts)
    out: dict[str, Any] = {
        "alpha": accepted / drafted if drafted else None, "rounds": rounds or None,
        "tokens_per_round": tokens / rounds if rounds else None,
        "mean_drafted": drafted / rounds if rounds else None,
        "mean_accepted": accepted / rounds if rounds else None,
        "gamma": max((k["draft_max"] for k in counts), default=None)}
    if costs:
        out |= {"c": costs["c"], "verify_cost": costs["verify_cost"], "verify_n": costs["verify_n"]}
    return out


def llama_cpp_ratios(setting: Setting, names: set[str]) -> dict[str, float]:
    """SpecLens auto and target-only ÷ llama.cpp target-only, and prompt lookup ÷ llama.cpp's, paired per repeat."""
    pairs = {"speclens_auto_over_llama_cpp": (Config("speclens", AUTO), Config(LLAMA_CPP, TARGET_ONLY)),
             "speclens_target_only_over_llama_cpp": (Config("speclens", TARGET_ONLY), Config(LLAMA_CPP, TARGET_ONLY)),
             "speclens_prompt_lookup_over_llama_cpp_prompt_lookup": (Config("speclens", PROMPT_LOOKUP),
                                                                     Config(LLAMA_CPP, PROMPT_LOOKUP)),
             # bench --pair: llama.cpp's binaries (their clocks leave prefill out; SpecLens's include it)
             "speclens_target_only_over_llama_bench": (Config("speclens", TARGET_ONLY), Config(LLAMA_CPP_BIN, TARGET_ONLY)),
             "speclens_speculative_over_llama_cpp_draft": (Config("speclens", MODEL_DRAFT),
                                                           Config(LLAMA_CPP_BIN, MODEL_DRAFT)),
             "speclens_auto_over_llama_cpp_draft": (Config("speclens", AUTO), Config(LLAMA_CPP_BIN, MODEL_DRAFT))}
    return {key: _paired_ratio(setting, a, b) for key, (a, b) in pairs.items() if a.name in names and b.name in names}


def _gamma_counts(rounds) -> dict[str, int]:
    """How often the live controller asked for each γ (auto runs)."""
    counts: dict[str, int] = {}
    for rd in rounds:
        counts[str(rd.gamma)] = counts.get(str(rd.gamma), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: int(kv[0])))
