"""`speclens bench`: SpecLens against HF `generate` on a fixed prompt suite, or a γ sweep."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from app.drafting.registry import AUTO, NO_DRAFT, SELF_DRAFT

from . import UsageError
from .common import (
    add_engine_args,
    add_model_args,
    add_tree_args,
    choose_drafter,
    load_kwargs,
    static_decoder,
    target_kwargs,
)


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="measure speedup against target-only and Hugging Face generation")
    add_model_args(p)
    # None: the comparison benches the self-draft (SpecLens and HF assisted share it); the soak and the
    # start-up timing use the app's own default, auto, as a user's window does
    p.set_defaults(draft=None)
    p.add_argument("--pair", nargs="?", const=PAIR, default=None, choices=(PAIR,),
                   help="bench the real pair (`speclens fetch-pair`: Qwen2.5-Coder-1.5B-Instruct Q4_K_M, its 0.5B as "
                        "draft; fetched when absent): the code suite, 128 new tokens, temperatures 0 and 0.7, rows "
                        "SpecLens target-only, with the 0.5B as --draft, --draft auto, and llama.cpp's own "
                        "llama-bench and llama-speculative-simple (built from llama-cpp-python's vendored source "
                        "when absent: packaging/build_llama_cpp.sh); --target/--draft/--prompts/--max-new-tokens "
                        "still override")
    p.add_argument("--trained", default=None, metavar="DIR",
                   help="a `speclens distill` output to bench as the trained draft (default: the best one found "
                        "for the target)")
    p.add_argument("--only", default=None, metavar="NAME,...",
                   help="run only these configurations (comma-separated, as named in the table, e.g. "
                        "'SpecLens target-only,HF assisted,SpecLens auto (default)'); target-only rows are always kept")
    p.add_argument("--no-auto", action="store_true",
                   help="leave out the app's default configuration (drafter and γ chosen by measurement)")
    p.add_argument("--gamma", type=int, default=4, help="draft length per round (1..16)")
    p.add_argument("--temperature", default="0,0.7", help="comma-separated settings; 0 = greedy (default: 0,0.7)")
    p.add_argument("--top-k", type=int, default=0, help="0 disables")
    p.add_argument("--top-p", type=float, default=1.0, help="1 disables")
    p.add_argument("--seed", type=int, default=0, help="sampling seed, the same for every run")
    p.add_argument("--prompts", default="bench", help="suite name under resources/prompts/ or a JSON file")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--repeats", type=int, default=3, help="interleaved repeats per prompt and configuration")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads while measuring (default: the count timed fastest at load, as the app does)")
    p.add_argument("--llama-cpp-threads", type=int, default=None, metavar="N",
                   help="threads of the llama.cpp rows, run in a process of their own on the target's GGUF when "
                        "llama-cpp-python is installed (default: the same count as SpecLens's)")
    p.add_argument("--no-llama-cpp", action="store_true", help="leave out the llama.cpp rows")
    p.add_argument("--sweep", default=None, metavar="G1,G2,...",
                   help="γ sweep instead of the comparison: measured and predicted speedup, plus a PNG")
    p.add_argument("--large-target", action="store_true",
                   help="also price SmolLM2-1.7B- and Llama-2-7B-shaped targets of random Q4_K blocks (GGUFs "
                        "written on the spot, ~1 and ~4 GB) on the native path, the target as their draft: step "
                        "against bytes ÷ triad, v(n), c, the speedup predicted at α 0.5-0.7, first-load memory, "
                        "and llama.cpp's step on the same files")
    p.add_argument("--gui-overhead", action="store_true",
                   help="also measure tokens/s through the GUI worker against headless decoding")
    p.add_argument("--serve-overhead", action="store_true",
                   help="also measure tokens/s streamed through `speclens serve` against `generate`, and the first token")
    add_engine_args(p)
    add_tree_args(p)
    p.add_argument("--quality", action="store_true",
                   help="instead: the native path's top-1 agreement and KL against float32 on every held-out token, "
                        "with two activation digits, the digits chosen at load and one digit, beside llama.cpp's "
                        "on the same GGUF and tokens (when llama-cpp-python is installed)")
    p.add_argument("--trees", action="store_true",
                   help="instead: token trees against chains for prompt lookup, the trained draft and their union "
                        "(tokens per round, nodes verified, verify cost, predicted and measured); --tree-nodes sizes them")
    p.add_argument("--gpu-mechanics", action="store_true",
                   help="instead: random-weight Llama pair (~1B / ~100M, bf16) built on the spot, eager against "
                        "compiled static steps at gamma 1, 2, 4, 8; nothing is downloaded")
    p.add_argument("--tiny", action="store_true", help="with --gpu-mechanics: tiny models, seconds on a CPU")
    p.add_argument("--startup", type=int, default=0, metavar="N",
                   help="instead: launch the desktop app N times (offscreen) and time each from process start to "
                        "the window and to ready to chat; uses --target and --draft when given")
    p.add_argument("--gui-soak", type=int, default=0, metavar="N",
                   help="instead: N messages in one session of the real window (offscreen), reporting GUI-thread "
                        "stalls (p50/p99/max), memory growth and reference health; uses --target, --draft and "
                        "--max-new-tokens")
    p.add_argument("--out", default="bench-results.json", help="JSON output; the Markdown goes beside it")
    p.add_argument("--docs", nargs="?", const="docs/benchmark.md", default=None, metavar="BENCHMARK_MD",
                   help="with the comparison (the default mode): also replace this machine class's table in "
                        "docs/benchmark.md (between its <!-- bench:begin CLASS --> and <!-- bench:end CLASS --> "
                        "markers; the class is the CPU's vendor and whether it has AMX) and write the whole run "
                        "as a new dated file in docs/bench-runs/")
    p.set_defaults(run=run)
    return p


PAIR = "qwen-coder"
PAIR_PROMPTS, PAIR_MAX_NEW_TOKENS = "code", 128


def pair_defaults(args: argparse.Namespace, fetch=None) -> None:
    """--pair: the real pair's two files as --target and --draft (fetched first, with the fetch's progress, when
    absent), the code suite and 128 new tokens where those options were left at their defaults (an option given
    with its default's value reads as left)."""
    if fetch is None:
        from .fetch_pair_cmd import fetch_with_progress as fetch
    defaults = add_parser(argparse.ArgumentParser(prog="speclens").add_subparsers())
    target, draft = fetch()
    if args.target == defaults.get_default("target"):
        args.target = str(target)
    if args.draft in (None, AUTO):  # the bench's own default (None) or the model args' (auto): the 0.5B file
        args.draft = str(draft)
    if args.prompts == defaults.get_default("prompts"):
        args.prompts = PAIR_PROMPTS
    if args.max_new_tokens == defaults.get_default("max_new_tokens"):
        args.max_new_tokens = PAIR_MAX_NEW_TOKENS
    args.pair_files = {"target": str(target), "draft": str(draft)}


def parse_temperatures(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--temperature takes comma-separated numbers like 0,0.7, got {text!r}") from None
    if not values:
        raise UsageError("--temperature needs at least one value")
    return values


def result_path(out: str) -> Path:
    """--out as the JSON file to write: a folder (one that exists, or a path ending in a separator) gets
    bench-results.json inside it, as `--out /tmp/run1` reads to a person."""
    path = Path(out).expanduser()
    if path.is_dir() or out.endswith(("/", os.sep)):
        return path / "bench-results.json"
    return path


def run(args: argparse.Namespace) -> int:
    """One benchmark per call: the GPU mechanics, the GUI soak, the start-up timing, a γ sweep, or the
    comparison (the default)."""
    if args.tiny and not args.gpu_mechanics:
        raise UsageError("--tiny only applies to --gpu-mechanics")
    if args.pair:
        other = [flag for flag, on in (("--gpu-mechanics", args.gpu_mechanics), ("--gui-soak", args.gui_soak),
                                       ("--startup", args.startup), ("--trees", args.trees),
                                       ("--quality", args.quality), ("--sweep", args.sweep)) if on]
        if other:
            raise UsageError(f"--pair runs the comparison; it does not apply to {other[0]}")
        pair_defaults(args)
    if args.docs is not None:
        _check_docs(args)  # before anything loads: a page without this class's markers is refused at once
    args.out = str(result_path(args.out))
    if args.gpu_mechanics:
        from app.bench.gpu_mechanics import run_cli

        return run_cli(args)
    if args.gui_soak or args.startup:
        args.draft = args.draft or AUTO
        return _gui_soak(args) if args.gui_soak else _startup(args)
    if args.repeats < 1:
        raise UsageError(f"--repeats must be >= 1, got {args.repeats}")
    if args.trees:
        from app.bench.trees import run_cli as run_trees

        return run_trees(args, parse_temperatures(args.temperature), load_kwargs(args))
    if args.quality:
        return _quality(args)
    for flag, value in (("--threads", args.threads), ("--llama-cpp-threads", args.llama_cpp_threads)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be >= 1, got {value}")
    from app.bench.prompts import load_suite
    from app.bench.sweep import parse_gammas

    settings = _settings(args)  # every value checked before anything loads
    gammas = parse_gammas(args.sweep) if args.sweep else None
    prompts = load_suite(args.prompts)
    return _sweep(args, prompts, settings[0], gammas) if gammas else _comparison(args, prompts, settings)


def _check_docs(args: argparse.Namespace) -> None:
    """--docs applies to the comparison only, and its page must hold this machine class's markers."""
    from app.bench import docs_table

    other = [flag for flag, on in (("--gpu-mechanics", args.gpu_mechanics), ("--gui-soak", args.gui_soak),
                                   ("--startup", args.startup), ("--trees", args.trees), ("--quality", args.quality),
                                   ("--sweep", args.sweep)) if on]
    if other:
        raise UsageError(f"--docs takes the comparison's table; it does not apply to {other[0]}")
    args.docs_command = command_line(args)
    docs_table.check_page(Path(args.docs).expanduser(), docs_machine(args).slug)


def docs_machine(args: argparse.Namespace):
    """The page's class for this run: the machine's, and for --pair a class of its own beside it (the pair's
    table must not replace the embedded model's)."""
    from dataclasses import replace

    from app.bench import docs_table

    machine = docs_table.machine_class()
    return replace(machine, slug=f"{machine.slug}-{args.pair}") if getattr(args, "pair", None) else machine


def command_line(args: argparse.Namespace) -> str:
    """`speclens bench` with the options this run was given that differ from their defaults (--out and --docs
    left out: they name files, not what was measured)."""
    import shlex

    bench = add_parser(argparse.ArgumentParser(prog="speclens").add_subparsers())
    words = ["speclens", "bench"]
    for action in bench._actions:  # noqa: SLF001
        if not action.option_strings or action.dest in ("help", "out", "docs"):
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or value is None:
            continue
        flag = max(action.option_strings, key=len)
        words += [flag] if action.nargs == 0 else [flag, shlex.quote(str(value))]
    return " ".join(words)


def _quality(args: argparse.Namespace) -> int:
    """The native path's distance from float32 beside llama.cpp's on the same GGUF and tokens (bench/fidelity.py)."""
    from app.bench import fidelity
    from app.bench.report import write_result
    from app.models import load_model

    _log(f"loading target {args.target!r} ...")
    target = load_model(args.target, device="cpu", **load_kwargs(args))
    _log(f"target on {target.kernels}; measuring every held-out token against float32 (and llama.cpp) ...")
    table = fidelity.measure(target, args.llama_cpp_threads)
    result = {"meta": {"target": target.name, "kernels": target.kernels}, "quality": table}
    text = "\n".join(["# Fidelity to float32", "", f"target `{target.name}` on {target.kernels}", "",
                      *fidelity.lines(table)]) + "\n"
    write_result(Path(args.out).expanduser(), result, text, _log)
    return 0


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _settings(args: argparse.Namespace) -> list:
    from app.engine import DecodeParams

    return [DecodeParams(gamma=args.gamma, temperature=t, top_k=args.top_k, top_p=args.top_p,
                         max_new_tokens=args.max_new_tokens, seed=args.seed)
            for t in parse_temperatures(args.temperature)]


def _load_pair(args: argparse.Namespace, *, need_draft_model: bool = False):
    """(Pair, its load kwargs): the target on its CPU path, the draft (the self-draft by default; a bf16
    target has none cheaper, so HF's assistant is then the target cast to bf16), HF's own fp32 copy."""
    import copy

    import torch
    import transformers

    from app.bench.runners import Pair
    from app.drafting.drafts import self_draft_dtype
    from app.engine import ModelDrafter
    from app.machine import threads
    from app.models import load_model

    if args.threads is not None:
        threads.pin(args.threads)
    transformers.logging.set_verbosity_error()  # HF warns about its own internal assistant kwargs
    kwargs = load_kwargs(args)
    _log(f"loading target {args.target!r} ...")
    target = load_model(args.target, device=args.device, **target_kwargs(args), **kwargs)
    profile = target.profile
    _log(f"target on {target.kernels}: {profile.kernels.reason if profile and profile.kernels else ''}")
    _log(f"CPU threads: {target.threads.reason if target.threads else torch.get_num_threads()}")
    if args.draft is None:
        args.draft = SELF_DRAFT if self_draft_dtype(target) is not None else NO_DRAFT
    draft_kwargs = dict(kwargs, device=args.draft_device) if args.draft_device else kwargs
    drafter, _ = choose_drafter(args, target, draft_kwargs, log=sys.stderr)  # --draft auto: measured
    draft_model = drafter.model if isinstance(drafter, ModelDrafter) else None
    if need_draft_model and draft_model is None:
        raise UsageError("--sweep needs a draft model (--draft self with --dtype float32, or a model)")
    hf_model = hf_bf16 = None
    if target.device.type == "cpu" and not getattr(args, "pair", None):  # HF loads a model in float32 on a CPU
        fp32 = target if target.kernels == "fp32" else load_model(
            args.target, device="cpu", dtype=torch.float32, **kwargs)
        hf_model = fp32.model
        hf_bf16 = copy.deepcopy(hf_model).to(torch.bfloat16)
        if draft_model is None and args.draft == NO_DRAFT:
            draft_model = hf_bf16  # HF assisted with the bf16 copy: the self-draft HF can run
    if target.threads is not None:
        # every load sets the count timed fastest for its own model (the fp32 copy's may differ): every row
        # of the report runs at the target's, as the app runs it
        torch.set_num_threads(target.threads.threads)
    pair = Pair(target, draft_model, drafter if isinstance(drafter, ModelDrafter) else None,
                hf_model=hf_model, hf_bf16=hf_bf16)
    return pair, kwargs


def _meta(args: argparse.Namespace, pair, n_prompts: int) -> dict:
    import torch
    import transformers

    from app.bench.memory import model_mib

    target, draft_model = pair.target, pair.draft_model
    # the count chosen at load: a native target runs the kernel's own threads and leaves torch's at 1
    threads = target.threads.threads if target.threads is not None else torch.get_num_threads()
    return {
        "target": target.name, "draft": pair.drafter.name if pair.drafter else args.draft, "gamma": args.gamma,
        "max_new_tokens": args.max_new_tokens, "repeats": args.repeats, "prompts": args.prompts,
        "n_prompts": n_prompts, "device": str(target.device), "threads": threads,
        "target_dtype": str(target.dtype).removeprefix("torch."), "target_kernels": target.kernels,
        "torch": torch.__version__, "transformers": transformers.__version__,
        "engine": "static, compiled" if args.compile else "static" if args.static else "dynamic",
        "compile_seconds": pair.static.compile_seconds if pair.static is not None else None,
        "model_mib": {"target": model_mib(target.model), "draft": model_mib(draft_model) if draft_model else None},
        "pair": getattr(args, "pair", None),
    }


def _sweep(args: argparse.Namespace, prompts, params, gammas: list[int]) -> int:
    """γ sweep: measured and predicted speedup of the draft model at each γ, plus a PNG."""
    from app.bench.plot import plot_sweep
    from app.bench.report import markdown, write_result
    from app.bench.sweep import run_sweep

    pair, _ = _load_pair(args, need_draft_model=True)
    pair.static = static_decoder(args, pair.target.model, pair.drafter, max(gammas))
    load_before = os.getloadavg()
    result: dict = {"meta": _meta(args, pair, len(prompts)), "settings": []}
    _log(f"sweeping gamma over {gammas} ({params.temperature:g} temperature) ...")
    sweep = run_sweep(pair, prompts, params, gammas, args.repeats, _log)
    _log_machine_check(pair)
    out = Path(args.out).expanduser()
    plot_sweep(sweep, out.with_suffix(".png"))
    result["sweep"] = sweep | {"plot": out.with_suffix(".png").name}
    result["meta"]["load_average"] = {"before": load_before, "after": os.getloadavg()}
    write_result(out, result, markdown(result), _log)
    return 0


def _comparison(args: argparse.Namespace, prompts, settings: list) -> int:
    """Every configuration on every prompt, interleaved, at each temperature; the CPU costs beside them;
    llama.cpp's rows from a process of its own, stopped when the run ends."""
    from app.drafting.auto import select, trained_drafts
    from app.drafting.drafts import make_drafter

    pair, kwargs = _load_pair(args)
    target = pair.target
    trained = [args.trained] if args.trained else [] if args.pair else [str(i.path) for i in trained_drafts(target)]
    if trained:
        _log(f"trained draft: {trained[0]}")
        pair.trained = make_drafter(trained[0], target)
    choice = None
    if not args.no_auto:
        _log("measuring the drafters for the auto configuration ...")
        pair.selection = select(target, "auto", **kwargs)
        choice = choice_json(pair.selection)
        _log(f"auto: {pair.selection.choice.reason}")
    pair.static = static_decoder(args, target.model, pair.drafter, args.gamma)
    try:
        llama = _start_llama_bin(args, pair) if args.pair else _start_llama_cpp(args, pair, prompts)
        _measure(args, pair, prompts, settings, choice, llama)
    finally:
        if pair.llama_cpp is not None:
            pair.llama_cpp.close()
    return 0


def _start_llama_bin(args: argparse.Namespace, pair) -> dict | None:
    """--pair: llama.cpp's own binaries (built when absent) on the pair's files, set on the pair, with their build
    and llama.cpp's c and v(n) from llama-bench; or why they do not run. None with --no-llama-cpp."""
    import torch

    from app.bench import llama_cpp_cli
    from app.bench.runners import LlamaBin

    if args.no_llama_cpp:
        return None
    files = getattr(args, "pair_files", None) or {}
    # llama.cpp drafts with --draft when that is a GGUF file, else with the pair's 0.5B
    target = Path(args.target)
    draft = Path(args.draft) if str(args.draft).lower().endswith(".gguf") else Path(files.get("draft") or args.draft)
    if target.suffix.lower() != ".gguf" or draft.suffix.lower() != ".gguf":
        return {"unavailable": "llama.cpp's binaries run on GGUF files (--target and --draft)"}
    threads = args.llama_cpp_threads or torch.get_num_threads()
    try:
        binaries = llama_cpp_cli.ensure_built(log=_log)
        _log(f"llama.cpp: c and v({llama_cpp_cli.COST_N}) from llama-bench on both files ({threads} threads) ...")
        costs = llama_cpp_cli.costs(binaries, target, draft, threads)
    except (llama_cpp_cli.LlamaCppCliError, OSError) as exc:
        return {"unavailable": str(exc)}
    pair.llama_bin = LlamaBin(binaries, target, draft, threads)
    return {"binaries": {"bench": str(binaries.bench), "speculative": str(binaries.speculative)},
            "build": binaries.info, "threads": threads, "costs": costs,
            "speculative_flags": {"draft_max": llama_cpp_cli.DRAFT_MAX, "draft_min": llama_cpp_cli.DRAFT_MIN,
                                  "draft_p_min": llama_cpp_cli.DRAFT_P_MIN}}


def _start_llama_cpp(args: argparse.Namespace, pair, prompts) -> dict | None:
    """The llama.cpp worker on the target's GGUF (set on the pair) and what it is, or why it does not run;
    None where it is not asked for (--no-llama-cpp, a target on a GPU)."""
    import torch

    from app.bench import llama_cpp_runner
    from app.bench.cpu_costs import N_MAX
    from app.bench.runners import LOOKUP_MAX_NGRAM
    from app.bench.suite import encode_prompts
    from app.drafting.timing import probe_ids

    if args.no_llama_cpp or pair.target.device.type != "cpu":
        return None
    gguf = llama_cpp_runner.gguf_of(pair.target)
    if gguf is None:
        return {"unavailable": "it runs on a GGUF target (the default, or a .gguf file)"}
    threads = args.llama_cpp_threads or torch.get_num_threads()
    longest = max(len(ids) for ids in [*encode_prompts(pair, prompts).values(), probe_ids(pair.target, N_MAX)])
    n_ctx = longest + args.max_new_tokens + N_MAX + args.gamma + 16  # the longest chat, its answer, a last draft
    _log(f"starting llama.cpp in its own process ({gguf.name}, {threads} threads) ...")
    pair.llama_cpp, info = llama_cpp_runner.start(gguf, threads, n_ctx, LOOKUP_MAX_NGRAM, args.gamma)
    _log(f"llama.cpp: {info.get('unavailable') or info['version']}")
    return info


def _measure(args: argparse.Namespace, pair, prompts, settings: list, choice: dict | None,
             llama_cpp: dict | None) -> None:
    """The CPU costs, then every setting interleaved; the JSON and Markdown written."""
    from app.bench.report import markdown, write_result
    from app.bench.suite import run_setting, summarize_setting

    target = pair.target
    load_before = os.getloadavg()
    result: dict = {"meta": _meta(args, pair, len(prompts)), "settings": []}
    if choice:
        result["choice"] = choice
    if llama_cpp is not None:
        result["llama_cpp_bin" if args.pair else "llama_cpp"] = llama_cpp
    llama_costs = (llama_cpp or {}).get("costs") if args.pair else None
    if target.device.type == "cpu":
        result["cpu"] = _cpu_costs(args, pair, prompts)
    for params in settings:
        _log(f"setting temperature={params.temperature:g}, gamma={params.gamma} ...")
        configs = pick_configs(pair, args.only, pair_rows=bool(args.pair))
        result["settings"].append(summarize_setting(
            run_setting(pair, prompts, params, args.repeats, configs=configs, log=_log), llama_costs))
    _log_machine_check(pair)
    if args.gui_overhead:
        from app.bench.gui_overhead import measure_gui_overhead

        _log("measuring the GUI worker's overhead ...")
        result["gui_overhead"] = measure_gui_overhead(pair, prompts, settings[0], args.repeats)
    if args.serve_overhead:
        from app.bench.serve_overhead import measure_serve_overhead

        _log("measuring the local server's overhead ...")
        result["serve_overhead"] = measure_serve_overhead(pair, prompts, settings[0], args.repeats)
    result["meta"]["load_average"] = {"before": load_before, "after": os.getloadavg()}
    write_result(Path(args.out).expanduser(), result, markdown(result), _log)
    if args.docs is not None:
        write_docs(result, Path(args.docs).expanduser(), getattr(args, "docs_command", None) or command_line(args),
                   machine=docs_machine(args))


def write_docs(result: dict, doc: Path, command: str, **kwargs) -> Path:
    """This machine class's table on the page replaced, the whole run written as a dated file beside it."""
    from app.bench import docs_table

    path = docs_table.update(result, doc, command, **kwargs)
    _log(f"replaced this machine's table in {doc} and wrote {path}")
    return path


def _log_machine_check(pair) -> None:
    """What the SpecLens rows' rounds said of the machine profile (app.bench.runners.Pair.live_check), as
    `generate` says it after its answer."""
    if pair.disputed:
        _log(f"{pair.disputed}: the next load measures this machine again (or run speclens calibrate)")


def _cpu_costs(args: argparse.Namespace, pair, prompts) -> dict:
    """Triad bandwidth, then v(n) n = 1..17 and GB/s per step of SpecLens's target and HF's fp32 copy;
    the 1.7B-shaped random target (--large-target); llama.cpp's step and v(n) on the same probe when it runs."""
    from app.bench import cpu_costs, llama_cpp_runner
    from app.drafting.timing import probe_ids

    _log("measuring memory bandwidth (triad) and v(n), n = 1..17 ...")
    triad = cpu_costs.triad_gbps()
    ids = probe_ids(pair.target, cpu_costs.N_MAX)
    out: dict = {"triad_gbps": triad, "rows": {pair.target.kernels: cpu_costs.bandwidth_row(pair.target.model, ids, triad)}}
    if pair.hf_model is not None and pair.hf_model is not pair.target.model:
        out["rows"]["fp32 (HF's CPU default)"] = cpu_costs.bandwidth_row(pair.hf_model, ids, triad)
    if args.large_target:
        _log("building the SmolLM2-1.7B-shaped random-weight target ...")
        from app.bench import large_target

        out["large_target"] = large_target.large_targets(pair.target, ids, triad,
                                                         llama_threads=args.llama_cpp_threads)
    if pair.llama_cpp is not None:
        _log("llama.cpp: one step and v(n) on the same probe ...")
        out["llama_cpp"] = llama_cpp_runner.verify_row(pair.llama_cpp, ids.tolist())
    return out


def choice_json(selection) -> dict:
    """What auto measured and chose, for the JSON and the Markdown."""
    cal, choice = selection.calibration, selection.choice
    options = {o.name: o for o in choice.options}
    return {
        "drafter": choice.drafter, "gamma": choice.gamma, "predicted": choice.predicted, "reason": choice.reason,
        "cached": cal.cached, "verify_seconds": list(cal.verify.seconds), "head_seconds": cal.verify.head,
        "profiles": [
            {"name": p.name, "label": p.label, "c": p.c, "c_round": p.c_round, "alpha": p.alpha, "coverage": p.coverage,
             "per_position": list(p.per_position), "gamma": options[p.name].gamma,
             "predicted": options[p.name].predicted}
            for p in cal.profiles
        ],
    }


def pick_configs(pair, only: str | None, pair_rows: bool = False):
    """All configurations for the pair (--pair: its five rows, runners.real_pair_configs), or the named subset
    (target-only rows are every ratio's base)."""
    from app.bench.runners import TARGET_ONLY, pair_configs, real_pair_configs

    configs = real_pair_configs(pair) if pair_rows else pair_configs(pair)
    if not only:
        return configs
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    unknown = wanted - {c.name for c in configs}
    if unknown:
        raise UsageError(f"--only: no configuration named {sorted(unknown)[0]!r}; "
                         f"choose from {', '.join(c.name for c in configs)}")
    return [c for c in configs if c.name in wanted or c.mode == TARGET_ONLY]


def _gui_soak(args: argparse.Namespace) -> int:
    from app.bench.gui_soak import markdown, run_soak
    from app.bench.report import write_result

    if args.gui_soak < 2:
        raise UsageError(f"--gui-soak needs at least 2 messages, got {args.gui_soak}")
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    result = run_soak(args.target, args.draft, args.gui_soak, args.max_new_tokens, log)
    write_result(Path(args.out).expanduser(), result, markdown(result), log)
    return 0


def _startup(args: argparse.Namespace) -> int:
    from app.bench.report import write_result
    from app.bench.startup import markdown, measure_startup

    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    result = measure_startup(args.startup, args.target, args.draft, log)
    write_result(Path(args.out).expanduser(), result, markdown(result), log)
    return 0
