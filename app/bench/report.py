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


def _verify(row: dict) -> str:
    """v(n) with its n, where the row knows it (older JSON files lack verify_n)."""
    if row.get("verify_cost") is None:
        return "–"
    n = row.get("verify_n")
    return f"{row['verify_cost']:.2f}" + (f" (n={n})" if n else "")


def setting_table(summary: dict) -> str:
    head = ("| configuration | tok/s median | min–max | speedup | ÷ best HF | γ | α | tokens / round "
            "| acceptance by position | mean accepted | histogram 0..γ | c | v(n) | predicted | efficiency | peak MiB |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in summary["configs"]:
        tps = row["tokens_per_second"]
        hist = " ".join(map(str, row["acceptance_histogram"])) if row["acceptance_histogram"] else "–"
        positions = row.get("per_position_acceptance")
        pos = " ".join("–" if a is None else f"{a:.2f}" for a in positions) if positions else "–"
        lines.append(
            f"| {row['config']} | {tps['median']:.1f} | {tps['min']:.1f}–{tps['max']:.1f} "
            f"| {_f(row['speedup'], '.2f', '×')} | {_f(row.get('ratio_to_best_hf'), '.2f', '×')} "
            f"| {_f(row.get('gamma'), 'd')} | {_f(row['alpha'], '.3f')} | {_f(row.get('tokens_per_round'))} "
            f"| {pos} | {_f(row['mean_accepted'])} "
            f"| {hist} | {_f(row['c'])} | {_verify(row)} | {_f(row['predicted_speedup'], '.2f', '×')} "
            f"| {_f(row['efficiency'])} | {_f(row['peak_memory_mib'], '.0f')} |"
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
        **LLAMA_CPP_RATIOS,
    }
    return [f"- {names[k]}: **{v:.2f}×**" for k, v in ratios.items() if k in names]


LLAMA_CPP_RATIOS = {
    "speclens_auto_over_llama_cpp": "SpecLens auto (default) ÷ llama.cpp target-only",
    "speclens_target_only_over_llama_cpp": "SpecLens target-only ÷ llama.cpp target-only",
    "speclens_prompt_lookup_over_llama_cpp_prompt_lookup": "SpecLens prompt lookup ÷ llama.cpp prompt lookup",
    "speclens_target_only_over_llama_bench": "SpecLens target-only ÷ llama.cpp target-only (llama-bench)",
    "speclens_speculative_over_llama_cpp_draft": "SpecLens speculative ÷ llama.cpp draft model",
    "speclens_auto_over_llama_cpp_draft": "SpecLens auto (default) ÷ llama.cpp draft model",
}


def pair_table(summary: dict) -> list[str]:
    """--pair: per configuration c, v(n), α, tokens a round, the γ it ran at, tokens/s and × target-only."""
    head = "| configuration | c | v(n) | α | tokens / round | γ | tok/s | × target-only |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in summary["configs"]:
        gamma = _f(row.get("gamma"), "d")
        if row.get("mode") == "auto" and row.get("gammas"):
            gamma += " (" + ", ".join(f"{g}: {k}" for g, k in row["gammas"].items()) + ")"
        elif row.get("engine") == "llama.cpp binaries" and row.get("gamma") is not None:
            gamma = f"≤{row['gamma']} (p-min)" + (f", {row['mean_drafted']:.1f} drafted a round"
                                                  if row.get("mean_drafted") is not None else "")
        lines.append(f"| {row['config']} | {_f(row['c'], '.3f')} | {_verify(row)} | {_f(row['alpha'], '.3f')} "
                     f"| {_f(row.get('tokens_per_round'))} | {gamma} | {row['tokens_per_second']['median']:.1f} "
                     f"| {_f(row['speedup'], '.2f', '×')} |")
    return lines


def llama_bin_lines(info: dict) -> list[str]:
    """--pair: which llama.cpp binaries ran, their build and flags, and llama.cpp's c and v(n) from llama-bench."""
    if info.get("unavailable"):
        return [f"llama.cpp binaries: {info['unavailable']}"]
    flags = info["speculative_flags"]
    costs = info["costs"]
    return ["Build (packaging/build_llama_cpp.sh):", "", "```", info["build"], "```", "",
            f"- llama.cpp target-only: `llama-bench -p 0 -n <max new tokens> -t {info['threads']} -r 1` per slot: "
            "decode from an empty context, no prompt, its own clock",
            f"- llama.cpp draft model: `llama-speculative-simple -m <target> -md <draft> -f <chat-templated prompt> "
            f"-t {info['threads']} -td {info['threads']} --spec-type draft-simple --spec-draft-n-max {flags['draft_max']} --spec-draft-n-min "
            f"{flags['draft_min']} --spec-draft-p-min {flags['draft_p_min']:g} --temp <setting>`; tokens/s is its "
            "'decoded' line (after the prompt), α its n_accept ÷ n_drafted, rounds = tokens − accepted",
            f"- llama.cpp's c = {costs['c']:.3f} (draft tg step {costs['draft_step_ms']:.1f} ms ÷ target "
            f"{costs['target_step_ms']:.1f} ms), v({costs['verify_n']}) = {costs['verify_cost']:.2f} (pp"
            f"{costs['verify_n']} time ÷ tg step), from llama-bench on both files",
            "", "The llama.cpp rows' clocks leave prefill out; the SpecLens rows' include it (they favour llama.cpp)."]


def llama_cpp_lines(result: dict) -> list[str]:
    """llama.cpp beside SpecLens: what ran, one step and v(n) on the same probe, tokens/s and the paired ratios
    per setting; or why it did not run (with how to install it)."""
    info = result["llama_cpp"]
    if info.get("unavailable"):
        return [f"llama.cpp: {info['unavailable']}"]
    build = info.get("system_info") or ""
    lookup = info["prompt_lookup"]
    lines = [f"llama-cpp-python {info['version']} on `{info['gguf']}`, threads: {info['threads']}, in a process of its "
             f"own (OMP_WAIT_POLICY there: {info['omp_wait_policy'] or 'unset'}); its prompt lookup "
             f"(LlamaPromptLookupDecoding) matches up to {lookup['max_ngram']} tokens and proposes "
             f"{lookup['num_pred_tokens']}. Build: {build}", ""]
    cpu = result.get("cpu") or {}
    verify = cpu.get("llama_cpp")
    ours = (cpu.get("rows") or {}).get(result["meta"].get("target_kernels"))
    if verify:
        ns = verify["n"]
        lines += [f"One pass over n new tokens after {verify['context']} cached, minimum over repeats; v(n) = its "
                  "time ÷ one step of the same engine.", "",
                  f"| | step ms | v(n), n = {', '.join(map(str, ns))} |", "|---|---|---|"]
        if ours:
            picked = [ours["v"][n - 1] for n in ns if n <= len(ours["v"])]
            lines.append(f"| SpecLens ({result['meta']['target_kernels']}), every row's logits "
                         f"| {ours['step_ms']:.1f} | {' '.join(f'{v:.2f}' for v in picked)} |")
        for key, label in (("v_all", "every row's logits (what verification needs)"),
                           ("v_last", "last row's logits only")):
            lines.append(f"| llama.cpp, {label} | {verify['step_ms']:.1f} | {' '.join(f'{v:.2f}' for v in verify[key])} |")
        if ours:
            lines += ["", f"- one step, SpecLens ÷ llama.cpp: **{ours['step_ms'] / verify['step_ms']:.2f}×** the time"]
        lines.append("")
    head = ("| setting | llama.cpp target-only | llama.cpp prompt lookup | SpecLens target-only | SpecLens auto "
            "| SpecLens target-only ÷ llama.cpp | SpecLens auto ÷ llama.cpp |")
    lines += ["Tokens/s (median over repeats, prefill included), ratios paired within each repeat:", "",
              head, "|" + "---|" * (head.count("|") - 1)]
    for summary in result["settings"]:
        tps = {row["config"]: row["tokens_per_second"]["median"] for row in summary["configs"]}
        lookup_speedup = next((row["speedup"] for row in summary["configs"] if row["config"] == "llama.cpp prompt lookup"),
                              None)
        ratios = summary["ratios"]
        lookup_cell = _f(tps.get("llama.cpp prompt lookup"), ".1f")
        if lookup_speedup is not None:
            lookup_cell += f" ({lookup_speedup:.2f}×)"
        lines.append(f"| {summary['setting']} | {_f(tps.get('llama.cpp target-only'), '.1f')} | {lookup_cell} "
                     f"| {_f(tps.get('SpecLens target-only'), '.1f')} | {_f(tps.get('SpecLens auto (default)'), '.1f')} "
                     f"| {_f(ratios.get('speclens_target_only_over_llama_cpp'), '.2f', '×')} "
                     f"| {_f(ratios.get('speclens_auto_over_llama_cpp'), '.2f', '×')} |")
    lines += ["", "Above greedy, llama.cpp samples with its own chain (top-k, then top-p, then temperature; min-p off): the "
                  "same distribution as SpecLens's when top-k and top-p are off, other draws. Its peak MiB is its own "
                  "process's."]
    return lines


def choice_lines(choice: dict) -> list[str]:
    """What `auto` measured on this machine and chose."""
    v = choice["verify_seconds"]
    lines = [f"- chose: {choice['reason']} ({'cached timings' if choice['cached'] else 'timed at load'})",
             "- verify cost v(n), n = 1..: " + " ".join(f"{s / v[0]:.2f}" for s in v)
             + f" (one target step {1000 * v[0]:.1f} ms; one head row {1000 * choice['head_seconds']:.1f} ms)"]
    for p in choice["profiles"]:
        first = f" (+{p['c_round']:.3f} a round)" if p.get("c_round") else ""
        lines.append(f"- {p['label']}: c {p['c']:.3f}{first}, α {p['alpha']:.3f}, proposes in {p['coverage']:.0%} of rounds"
                     f" → best γ {p['gamma']}, predicted {p['predicted']:.2f}×")
    return lines


def cpu_lines(cpu: dict) -> list[str]:
    """v(n) n = 1..17, bytes and GB/s per step against the triad measured in the same run."""
    lines = [f"STREAM-like triad in this run: **{cpu['triad_gbps']:.1f} GB/s**; floor = bytes read per step ÷ triad.",
             "", "| kernels | step ms | MiB read / step | GB/s | floor ms | step ÷ floor | v(n), n = 1..17 |",
             "|---|---|---|---|---|---|---|"]
    rows = dict(cpu["rows"])
    for shape, big in (cpu.get("large_target") or {}).items():
        for digits, row in big["rows"].items():
            rows[f"{shape}-shaped random target, {big['kernels']}, {digits}"] = row
    for name, r in rows.items():
        lines.append(f"| {name} | {r['step_ms']:.1f} | {r['step_mib']:.0f} | {r['gbps']:.1f} | {r['floor_ms']:.1f} "
                     f"| {r['over_floor']:.2f} | {' '.join(f'{v:.2f}' for v in r['v'])} |")
    for shape, big in (cpu.get("large_target") or {}).items():
        lines += ["", *large_lines(shape, big)]
    return lines


def large_lines(shape: str, big: dict) -> list[str]:
    """A large random target: its draft's cost, the predicted speedups, first-load memory, llama.cpp beside it."""
    out = [f"**{shape}-shaped target** ({big['parameters'] / 1e9:.2f} B weights, random {big['kernels']}, "
           f"{big['file_bytes'] / 2**30:.2f} GiB file); draft {big['draft']} ({big['draft_kernels']}):"]
    for digits, row in big["rows"].items():
        speeds = ", ".join(f"α {a}: {p['speedup']:.2f}× at γ {p['gamma']}" for a, p in row["predicted"].items())
        out.append(f"- {digits}: c = **{row['c']:.3f}** target steps; predicted {speeds}")
    mem = big.get("first_load_memory") or {}
    if "peak" in mem:
        out.append(f"- first load's peak memory {mem['peak'] / 2**30:.2f} GiB = {mem['peak_over_file']:.2f}× the file "
                   f"({mem['load_over_file']:.2f}× above the process's {mem['baseline'] / 2**30:.2f} GiB before it)")
    llama = big.get("llama_cpp")
    if llama and "step_ms" in llama:
        out.append(f"- llama.cpp on the same file: step {llama['step_ms']:.1f} ms; v(n) every row's logits, n = "
                   f"{', '.join(map(str, llama['n']))}: {' '.join(f'{v:.2f}' for v in llama['v_all'])}")
    elif llama:
        out.append(f"- llama.cpp: {llama.get('unavailable') or llama.get('error')}")
    return out


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
        out += ["", f"## {summary['setting']}", ""]
        if meta.get("pair"):
            out += [*pair_table(summary), "", "All columns:", ""]
        out += [setting_table(summary), "", *ratio_lines(summary)]
    if result.get("llama_cpp_bin"):
        out += ["", "## llama.cpp's own binaries on the same pair", "", *llama_bin_lines(result["llama_cpp_bin"])]
    if result.get("llama_cpp"):
        out += ["", "## llama.cpp on the same GGUF, prompts and threads", "", *llama_cpp_lines(result)]
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
