"""The distill report: data statistics, the config as JSON and the Markdown written beside a draft."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import DistillConfig


def data_stats(train, val, seconds) -> dict:
    by_source: Counter[str] = Counter()
    answer = 0
    for s in train:
        by_source[s.source] += 1
        answer += len(s.tokens) - s.answer_start if s.source != "text" else 0
    return {"sequences": len(train), "tokens": sum(len(s.tokens) for s in train), "answer_tokens": answer,
            "by_source": dict(by_source), "validation_sequences": len(val), "seconds": round(seconds, 1),
            "answer_tok_s": round(answer / seconds, 1) if seconds else None}


def config_json(cfg: DistillConfig) -> dict:
    d = asdict(cfg)
    d["samples"] = list(cfg.samples)
    return d


def markdown(r: dict) -> str:
    s = r.get("summary", {})
    lines = [f"# {r['name']}", "", f"Target: {r['target']} on {r['device']} ({r['threads']} threads, torch {r['torch']}).", ""]
    if r.get("command"):
        lines += ["Command:", "", f"    {r['command']}", ""]
    d, t = r["data"], r["training"]
    lines += [
        f"- Data: {d['sequences']} sequences, {d['tokens']} tokens ({d['answer_tokens']} answer tokens) in "
        f"{d['seconds']} s; reduced head K = {d['vocab_k']}, validation answer tokens inside it: "
        f"{_pct(d['coverage']['validation_answer_tokens_in_subset'])}.",
        f"- Training: {t['steps']} steps, {t['tokens']} tokens in {t['seconds']} s; best validation top-1 agreement "
        f"per step {t['best_val_agreement']}.",
    ]
    ev = r.get("evaluation")
    if ev:
        lines += ["", f"Held-out evaluation (gamma {s['gamma']}, {ev['max_new_tokens']} new tokens per prompt):", "",
                  "| setting | prompts | alpha | per-position acceptance | tokens/round |", "|---|---|---|---|---|"]
        for label, e in ev["by_temperature"].items():
            pos = ", ".join("-" if a is None else f"{a:.2f}" for a in e["per_position_acceptance"])
            lines.append(f"| {label} | {e['prompts']} | {_num(e['alpha'])} | {pos} | {_num(e['tokens_per_round'])} |")
        lines += ["", f"c = {_num(s.get('c'))} (draft step ÷ target step), v = {_num(s.get('v'))} (verify of "
                  f"gamma + 1 tokens ÷ target step), target step {_num(s.get('target_step_ms'), 1)} ms."]
        if s.get("predicted_speedup"):
            lines.append("")
            for label, by_gamma in s["predicted_speedup"].items():
                lines.append(f"Predicted speedup {label} by gamma (v held at its gamma-{s['gamma']} value): "
                             + ", ".join(f"{g}: {x:.2f}" for g, x in by_gamma.items()))
    elif r.get("cancelled"):
        lines += ["", "Cancelled before the evaluation: the best checkpoint was kept."]
    return "\n".join(lines) + "\n"


def _num(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"
