"""The Markdown rendering of a benchmark's JSON (printed, and written beside the JSON)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path


def _f(value, fmt: str = ".2f", suffix: str = "") -> str:
    return "–" if value is None else f"{value:{fmt}}{suffix}"


def _load(meta: dict) -> str:
    load = meta.get("load_average")
    if not load:
        return ""
    return f"; 1-min load average {load['before'][0]:.1f} before, {load['after'][0]:.1f} after (noise)"


def _engine(meta: dict) -> str:
    """The engine path and what each model holds (older JSON files lack both)."""
    mib = meta.get("model_mib") or {}
    parts = [f"SpecLens engine: {meta.get('engine', 'dynamic')}"]
    if meta.get("compile_seconds") is not None:
        parts.append(f"compile {meta['compile_seconds']:.1f} s before measuring")
    if mib:
        draft = f", draft {mib['draft']:.0f} MiB" if mib.get("draft") else ""
        parts.append(f"weights: target {mib['target']:.0f} MiB{draft}")
    return "; ".join(parts) + "."


def setting_table(summary: dict) -> str:
    head = ("| configuration | tok/s median | min–max | speedup | ÷ best HF | α | acceptance by position "
            "| mean accepted | histogram 0..γ | c | verify cost | predicted | efficiency | peak MiB |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in summary["configs"]:
        tps = row["tokens_per_second"]
        hist = " ".join(map(str, row["acceptance_histogram"])) if row["acceptance_histogram"] else "–"
        positions = row.get("per_position_acceptance")
        pos = " ".join("–" if a is None else f"{a:.2f}" for a in positions) if positions else "–"
        lines.append(
            f"| {row['config']} | {tps['median']:.1f} | {tps['min']:.1f}–{tps['max']:.1f} "
            f"| {_f(row['speedup'], '.2f', '×')} | {_f(row.get('ratio_to_best_hf'), '.2f', '×')} "
            f"| {_f(row['alpha'], '.3f')} | {pos} | {_f(row['mean_accepted'])} "
            f"| {hist} | {_f(row['c'])} | {_f(row['verify_cost'])} | {_f(row['predicted_speedup'], '.2f', '×')} "
            f"| {_f(row['efficiency'])} | {row['peak_memory_mib']:.0f} |"
        )
    return "\n".join(lines)


def ratio_lines(summary: dict) -> list[str]:
    ratios = summary["ratios"]
    names = {
        "speclens_over_hf_target_only": "SpecLens target-only / HF target-only",
        "speclens_over_hf_speculative": "SpecLens speculative / HF assisted",
        "speclens_over_hf_prompt_lookup": "SpecLens prompt lookup / HF prompt lookup",
        "best_speclens_over_best_hf": f"best SpecLens ({ratios.get('best_speclens')}) / best HF ({ratios.get('best_hf')})",
        "speclens_auto_over_best_hf": f"SpecLens auto (default) / best HF ({ratios.get('best_hf')})",
    }
    return [f"- {names[k]}: **{v:.2f}×**" for k, v in ratios.items() if k in names]


def choice_lines(choice: dict) -> list[str]:
    """What `auto` measured on this machine and chose."""
    v = choice["verify_seconds"]
    lines = [f"- chose: {choice['reason']} ({'cached timings' if choice['cached'] else 'timed at load'})",
             "- verify cost v(n), n = 1..: " + " ".join(f"{s / v[0]:.2f}" for s in v)
             + f" (one target step {1000 * v[0]:.1f} ms; one head row {1000 * choice['head_seconds']:.1f} ms)"]
    for p in choice["profiles"]:
        lines.append(f"- {p['label']}: c {p['c']:.3f}, α {p['alpha']:.3f}, proposes in {p['coverage']:.0%} of rounds"
                     f" → best γ {p['gamma']}, predicted {p['predicted']:.2f}×")
    return lines


def cpu_lines(cpu: dict) -> list[str]:
    """v(n) n = 1..17, bytes and GB/s per step against the triad measured in the same run."""
    lines = [f"STREAM-like triad in this run: **{cpu['triad_gbps']:.1f} GB/s**; floor = bytes read per step ÷ triad.",
             "", "| kernels | step ms | MiB read / step | GB/s | floor ms | step ÷ floor | v(n), n = 1..17 |",
             "|---|---|---|---|---|---|---|"]
    rows = dict(cpu["rows"])
    if cpu.get("large_target"):
        big = cpu["large_target"]
        rows[f"SmolLM2-1.7B-shaped random target, {big['kernels']}"] = big
    for name, r in rows.items():
        lines.append(f"| {name} | {r['step_ms']:.1f} | {r['step_mib']:.0f} | {r['gbps']:.1f} | {r['floor_ms']:.1f} "
                     f"| {r['over_floor']:.2f} | {' '.join(f'{v:.2f}' for v in r['v'])} |")
    if cpu.get("large_target"):
        big = cpu["large_target"]
        lines += ["", f"- 1.7B-shaped target ({big['parameters'] / 1e9:.2f} B weights, random): draft "
                      f"{big['draft']} ({big['draft_kernels']}) costs c = **{big['c']:.3f}** target steps"]
    llama = cpu.get("llama_cpp")
    if isinstance(llama, dict):
        lines += ["", f"- llama.cpp target-only on the same GGUF and prompts: **{llama['tokens_per_second']:.1f} tok/s** "
                      "(greedy, prefill included)"]
    elif llama:
        lines += ["", f"- llama.cpp: {llama}"]
    return lines


def markdown(result: dict) -> str:
    meta = result["meta"]
    out = [
        "# SpecLens benchmark",
        "",
        f"target `{meta['target']}`, draft `{meta['draft']}`, γ = {meta['gamma']}, "
        f"{meta['max_new_tokens']} new tokens max, {meta['repeats']} repeats, suite `{meta['prompts']}` "
        f"({meta['n_prompts']} prompts), device {meta['device']}, {meta['threads']} threads, "
        f"target kernels {meta.get('target_kernels', meta.get('target_dtype', '?'))}, "
        f"torch {meta['torch']}, transformers {meta['transformers']}{_load(meta)}",
        "",
        _engine(meta),
        "",
        "Speedup is over the same engine's target-only run (paired within each repeat, median over repeats); "
        "predicted = (1 − α^(γ+1)) / ((1 − α)(γc + verify cost)); efficiency = speedup / predicted.",
    ]
    if result.get("choice"):
        out += ["", "## Drafter choice (auto)", "", *choice_lines(result["choice"])]
    if result.get("cpu"):
        out += ["", "## CPU step against memory bandwidth", "", *cpu_lines(result["cpu"])]
    for summary in result["settings"]:
        out += ["", f"## {summary['setting']}", "", setting_table(summary), "", *ratio_lines(summary)]
    if result.get("sweep"):
        out += ["", sweep_table(result["sweep"])]
    if result.get("gui_overhead"):
        g = result["gui_overhead"]
        out += ["", "## GUI overhead", "",
                f"headless {g['headless_tps']:.1f} tok/s, through the GUI worker {g['gui_tps']:.1f} tok/s: "
                f"overhead **{100 * g['overhead']:.1f}%**"]
    if result.get("serve_overhead"):
        from .serve_overhead import markdown_lines

        out += markdown_lines(result["serve_overhead"])
    return "\n".join(out) + "\n"


def sweep_table(sweep: dict) -> str:
    lines = [
        f"## γ sweep ({sweep['setting']})", "",
        "| γ | tok/s | measured speedup | α | verify cost | predicted |", "|---|---|---|---|---|---|",
    ]
    for p in sweep["points"]:
        lines.append(
            f"| {p['gamma']} | {p['tokens_per_second']:.1f} | {p['speedup']:.2f}× | {_f(p['alpha'], '.3f')} "
            f"| {p['verify_cost']:.2f} | {p['predicted_speedup']:.2f}× |"
        )
    lines += ["", f"c = {sweep['c']:.2f}; best γ measured **{sweep['best_gamma_measured']}**, "
                  f"predicted **{sweep['best_gamma_predicted']}**"]
    if sweep.get("plot"):
        lines += ["", f"![speedup against γ]({sweep['plot']})"]
    return "\n".join(lines)


def write_result(out: Path, result: dict, text: str, log: Callable[[str], None]) -> None:
    """The JSON result and its Markdown rendering side by side; the Markdown is also printed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    out.with_suffix(".md").write_text(text, encoding="utf-8")
    print(text)
    log(f"wrote {out} and {out.with_suffix('.md')}")
