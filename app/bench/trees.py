"""`speclens bench --trees`: token trees against chains for each drafter (prompt lookup, the trained draft,
their union) on one prompt suite, interleaved, with the policy's prediction beside each measurement.

Per row: tokens/s and its ratio to target-only, mean tokens per round, nodes verified per round (a
chain verifies γ), the verify pass's and the draft's cost per round in target steps, the predicted
speedup and the efficiency (measured ÷ predicted). Hugging Face `generate` has no token trees, so it has no row here.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.engine.protocols import AnyDrafter
    from app.engine.static import StaticDecoder

HF_NOTE = "Hugging Face transformers has no token-tree decoding (its assisted generation verifies one chain), so no HF row."
UNION_LOOKUP_NODES = 4  # nodes the lookup trie adds to the trained draft's tree in the union row


@dataclass
class Row:
    name: str
    drafter: AnyDrafter | None
    gamma: int
    predicted: float | None = None
    nodes: int = 0  # a tree's node budget (0: a chain or target-only)
    tokens: int = 0
    rounds: int = 0
    verified: int = 0  # tokens through the verify passes (a chain's γ + 1, a tree's nodes + 1)
    verify_s: float = 0.0
    seconds: float = 0.0
    outputs: list = field(default_factory=list)
    static: StaticDecoder | None = None  # this row runs on it (--static); None: dynamic caches


def build_rows(target, trained, lookup, cal, args) -> list[Row]:
    """Target-only, then per drafter its best chain and its tree (measured budget or --tree-nodes), then the union."""
    from app.engine.policy import TREE_DEPTH, best_gamma, best_nodes, speedup
    from app.engine.tree_drafters import UnionTreeDrafter

    profiles = {p.name: p for p in cal.profiles}
    rows = [Row("SpecLens target-only", None, 1, 1.0)]
    forms = {}
    for spec, drafter in (("prompt-lookup", lookup), (str(trained[0]), trained[1]) if trained else (None, None)):
        if drafter is None:
            continue
        p = profiles[spec]
        gamma, s = best_gamma(p, cal.verify)
        nodes = args.tree_nodes if args.tree_nodes != "auto" else (best_nodes(p, cal.verify)[0] or 16)
        tree = drafter.tree_form(nodes, TREE_DEPTH)
        forms[spec] = tree
        rows.append(Row(f"{p.label}: chain γ {gamma}", drafter, gamma, s))
        rows.append(Row(f"{p.label}: tree of {nodes} nodes", tree, TREE_DEPTH,
                        speedup(p, TREE_DEPTH, cal.verify, nodes) if p.tree_accepted else None, nodes))
    if trained:
        union = UnionTreeDrafter(forms[str(trained[0])], lookup.tree_form(UNION_LOOKUP_NODES, TREE_DEPTH))
        rows.append(Row(f"{profiles[str(trained[0])].label} + lookup: tree of {union.budget} nodes", union, TREE_DEPTH,
                        None, union.budget))
    return rows


def run_rows(target, rows: list[Row], prompts, params, repeats: int, log) -> None:
    """Every prompt and repeat runs every row in turn (interleaved: machine load hits all rows alike)."""
    from app.engine import generate

    for rep in range(repeats):
        for bp in prompts:
            ids = target.encode_chat(list(bp.messages))
            for row in rows:
                r = generate(target.model, ids, row.drafter, replace(params, gamma=row.gamma),
                             stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size, static=row.static)
                played = r.rounds[1:]  # the prefill round is the same for every row: left out
                row.tokens += sum(x.emitted for x in played)
                row.rounds += len(played)
                row.verified += sum(x.verified for x in played)
                row.verify_s += sum(x.verify_time for x in played)
                row.seconds += sum(x.draft_time + x.verify_time for x in played)
                if rep == 0:
                    row.outputs.append(r.token_ids)
        log(f"  repeat {rep + 1}/{repeats} done")


def summarize(rows: list[Row], temperature: float) -> dict:
    base = rows[0]
    step = base.verify_s / base.rounds if base.rounds else 0.0  # one target step, as measured in this run
    base_rate = base.tokens / base.seconds if base.seconds else 0.0
    out = []
    for row in rows:
        rate = row.tokens / row.seconds if row.seconds else 0.0
        measured = rate / base_rate if base_rate else None
        out.append({
            "name": row.name, "nodes": row.nodes, "gamma": row.gamma, "tokens_per_second": rate,
            "speedup": measured, "tokens_per_round": row.tokens / row.rounds if row.rounds else None,
            "verified_per_round": row.verified / row.rounds if row.rounds else None,
            "verify_steps": (row.verify_s / row.rounds) / step if row.rounds and step else None,
            "draft_steps": ((row.seconds - row.verify_s) / row.rounds) / step if row.rounds and step else None,
            "predicted": row.predicted,
            "efficiency": measured / row.predicted if measured and row.predicted else None,
            "same_as_target_only": row.outputs == base.outputs if temperature == 0 else None,
        })
    return {"temperature": temperature, "rows": out}


def markdown(result: dict) -> str:
    def f(x, spec=".2f"):
        return "–" if x is None else format(x, spec)

    m = result["meta"]
    lines = [f"# Token trees against chains: {m['target']} on {m['device']}, {m['prompts']} "
             f"({m['n_prompts']} prompts × {m['repeats']}), {m['max_new_tokens']} new tokens", "",
             f"Choice at load: {result['choice']}", "", HF_NOTE, ""]
    for setting in result["settings"]:
        lines += [f"## T = {setting['temperature']:g}", "",
                  "| configuration | tok/s | × target-only | tokens/round | verified/round | verify cost (steps) | "
                  "draft cost (steps) | predicted × | efficiency |", "|---|---|---|---|---|---|---|---|---|"]
        for r in setting["rows"]:
            same = " (≠ target-only greedy!)" if r["same_as_target_only"] is False else ""
            lines.append(f"| {r['name']}{same} | {f(r['tokens_per_second'], '.1f')} | {f(r['speedup'])} | "
                         f"{f(r['tokens_per_round'])} | {f(r['verified_per_round'], '.1f')} | {f(r['verify_steps'])} | "
                         f"{f(r['draft_steps'])} | {f(r['predicted'])} | {f(r['efficiency'])} |")
        lines.append("")
    lines.append(f"Load average before/after: {m['load_average']['before']} / {m['load_average']['after']}")
    return "\n".join(lines) + "\n"


def run_cli(args, temperatures: list[float], load_kwargs: dict) -> int:
    """The --trees mode of `speclens bench` (its --target, --trained, --prompts, --repeats, --max-new-tokens,
    --threads, --seed, --tree-nodes, --static, --compile and --out; the temperatures and loading options
    parsed by it)."""
    import torch

    from app.bench.prompts import load_suite
    from app.bench.report import write_result
    from app.drafting.auto import calibrate, trained_drafts
    from app.drafting.drafts import make_drafter
    from app.drafting.registry import PROMPT_LOOKUP
    from app.engine import DecodeParams
    from app.engine.policy import choose
    from app.machine import threads
    from app.models import load_model

    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    if args.threads is not None:
        threads.pin(args.threads)
    prompts = load_suite(args.prompts)
    target = load_model(args.target, device=args.device, **load_kwargs)
    spec = args.trained or next((str(i.path) for i in trained_drafts(target)), None)
    trained = (spec, make_drafter(spec, target)) if spec else None
    lookup = make_drafter(PROMPT_LOOKUP, target)  # as timed, and as every front end runs it: the registry's
    log("measuring verify costs and the drafters' chains and trees ...")
    cal, _ = calibrate(target, [s for s in (spec, "prompt-lookup") if s])
    rows = build_rows(target, trained, lookup, cal, args)
    if args.static or args.compile:  # on static caches every row that has a static form, its shapes warmed first
        from app.engine.static import StaticDecoder

        static = StaticDecoder(target.model, compile=args.compile)
        for row in rows:
            reason = static.supports(row.drafter)
            if reason is not None:
                log(f"{row.name} stays on dynamic caches: {reason}")
                row.name += " (dynamic cache)"
                continue
            log(f"warming up the static steps of {row.name} ...")
            static.warm_up(row.drafter, row.gamma)
            row.static = static
    load_before = os.getloadavg()
    result: dict[str, Any] = {"meta": {"target": target.name, "device": str(target.device), "prompts": args.prompts,
                       "n_prompts": len(prompts), "repeats": args.repeats, "max_new_tokens": args.max_new_tokens,
                       "threads": torch.get_num_threads(), "verify_seconds": list(cal.verify.seconds),
                       "engine": "static, compiled" if args.compile else "static" if args.static else "dynamic"},
              "choice": choose(cal.profiles, cal.verify, device=cal.device).reason, "note": HF_NOTE, "settings": []}
    for t in temperatures:
        params = DecodeParams(temperature=t, top_k=args.top_k, top_p=args.top_p, max_new_tokens=args.max_new_tokens,
                              seed=args.seed)
        log(f"temperature {t:g}: {len(rows)} configurations ...")
        for row in rows:
            row.tokens = row.rounds = row.verified = 0
            row.verify_s = row.seconds = 0.0
            row.outputs = []
        run_rows(target, rows, prompts, params, args.repeats, log)
        result["settings"].append(summarize(rows, t))
    result["meta"]["load_average"] = {"before": load_before, "after": os.getloadavg()}
    write_result(Path(args.out).expanduser(), result, markdown(result), log)
    return 0
