"""`speclens bench --gpu-mechanics`: do static caches and captured steps pay off on this device?

Random-weight Llama-shaped models are built on the spot (nothing is downloaded): a ~1.1B target and a
~100M draft in bf16, same 32k vocabulary. At gamma 1, 2, 4, 8 it reports tokens/s for HF target-only,
HF assisted, SpecLens eager (dynamic caches), SpecLens static eager and SpecLens static compiled; c and
the verify cost from timed steps; the host's share of round time; host syncs per round.
Acceptance on random weights means nothing: alpha is printed only to show the loop ran.
`--tiny` runs the same code on tiny models at gamma 1 and 2 (a CPU test); its compile uses dynamo's
eager backend, which checks the plumbing, not the speed.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any, TypedDict

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

from app.engine import DecodeParams, ModelDrafter, generate
from app.engine.runner import Runner
from app.engine.static import StaticDecoder
from app.engine.stats import alpha_estimate
from app.machine.clock import sync

from .costs import measure_costs
from .memory import PeakMemory, model_mib

GAMMAS = (1, 2, 4, 8)


class Size(TypedDict):
    target: dict[str, int]  # LlamaConfig's shape fields
    draft: dict[str, int]
    vocab: int
    prompt: int  # prompt tokens
    new_tokens: int
    repeats: int
    backend: str  # torch.compile's
    gammas: tuple[int, ...]

TARGETS = {"host_overhead": 0.10, "compiled_over_hf_assisted": 2.0, "c": 0.10}  # issue 13, on a lent GPU
SIZES: dict[str, Size] = {
    "full": {
        # Llama-3.2-1B's trunk with a 32k vocabulary (1.1B), and a 12-layer 768-wide draft (~100M).
        "target": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                       num_key_value_heads=8),
        "draft": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=8, num_attention_heads=12,
                      num_key_value_heads=4),
        "vocab": 32000, "prompt": 128, "new_tokens": 128, "repeats": 2, "backend": "inductor", "gammas": GAMMAS,
    },
    "tiny": {
        "target": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                       num_key_value_heads=2),
        "draft": dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                      num_key_value_heads=2),
        "vocab": 512, "prompt": 12, "new_tokens": 12, "repeats": 1, "backend": "eager", "gammas": (1, 2),
    },
}


def build(shape: dict, vocab: int, dtype: torch.dtype, device: torch.device, seed: int) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, max_position_embeddings=4096, tie_word_embeddings=False,
                         bos_token_id=0, eos_token_id=1, pad_token_id=1, **shape)
    with torch.device(device):
        model = LlamaForCausalLM(config)
    return model.to(dtype).eval()


class Mechanics:
    def __init__(self, size: str, device: torch.device, log) -> None:
        spec = SIZES[size]
        self.spec, self.device, self.log = spec, device, log
        self.dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
        t0 = time.perf_counter()
        self.target = build(spec["target"], spec["vocab"], self.dtype, device, seed=0)
        self.draft = build(spec["draft"], spec["vocab"], self.dtype, device, seed=1)
        self.build_seconds = time.perf_counter() - t0
        gen = torch.Generator().manual_seed(2)
        self.prompt = torch.randint(2, spec["vocab"], (spec["prompt"],), generator=gen)
        self.eager = StaticDecoder(self.target)
        self.compiled = StaticDecoder(self.target, compile=True, backend=spec["backend"])
        self.drafter = ModelDrafter(self.draft)

    def params(self, gamma: int) -> DecodeParams:
        # T = 1 on random weights: near-uniform p and q overlap, so rounds accept drafts and the paths all run.
        return DecodeParams(gamma=gamma, temperature=1.0, max_new_tokens=self.spec["new_tokens"], seed=0)

    def speclens(self, gamma: int, drafter, static) -> dict:
        runs = []
        for _ in range(self.spec["repeats"]):
            with PeakMemory(self.device) as mem:
                start = time.perf_counter()
                result = generate(self.target, self.prompt, drafter, self.params(gamma), vocab_size=self.spec["vocab"],
                                  static=static)
                sync(self.device)
                seconds = time.perf_counter() - start
            runs.append((len(result.token_ids) / seconds, result, mem.peak_mib))
        tps, result, peak = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        assert result.finished is not None
        return {"tps": tps, "rounds": len(result.rounds), "seconds_per_round": result.finished.elapsed / len(result.rounds),
                "alpha": alpha_estimate(result.rounds), "peak_mib": peak}

    def hf(self, gamma: int | None) -> dict:
        extra = {}
        if gamma is not None:
            cfg = self.draft.generation_config
            cfg.num_assistant_tokens, cfg.num_assistant_tokens_schedule = gamma, "constant"
            cfg.assistant_confidence_threshold = 0.0
            extra["assistant_model"] = self.draft
        ids = self.prompt.view(1, -1).to(self.device)
        runs = []
        for _ in range(self.spec["repeats"]):
            torch.manual_seed(0)
            with PeakMemory(self.device) as mem, torch.inference_mode():
                start = time.perf_counter()
                out = self.target.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True, temperature=1.0, top_k=0,
                    max_new_tokens=self.spec["new_tokens"], min_new_tokens=self.spec["new_tokens"], pad_token_id=1,
                    **extra,
                )
                sync(self.device)
                seconds = time.perf_counter() - start
            runs.append(((out.shape[1] - ids.shape[1]) / seconds, mem.peak_mib))
        tps, peak = sorted(runs)[len(runs) // 2]
        return {"tps": tps, "peak_mib": peak}

    def busy_share(self, gamma: int, drafter, static, wall_per_round: float) -> float | None:
        """Host overhead: 1 - (GPU kernel time per round, profiled) / (wall time per round, unprofiled)."""
        if self.device.type != "cuda":
            return None
        try:
            from torch.profiler import ProfilerActivity, profile

            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                result = generate(self.target, self.prompt, drafter, self.params(gamma),
                                  vocab_size=self.spec["vocab"], static=static)
                sync(self.device)
            busy_us = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0))
                          for e in prof.key_averages())
        except Exception as exc:  # a profiler that cannot run here leaves the column empty, not the run
            self.log(f"  profiler unavailable: {type(exc).__name__}: {exc}")
            return None
        busy_per_round = busy_us / 1e6 / len(result.rounds)
        return max(0.0, 1.0 - busy_per_round / wall_per_round)

    def syncs_per_round(self, gamma: int) -> float | None:
        """CUDA's sync debug mode warns on every synchronising call; count them inside the static rounds."""
        if self.device.type != "cuda":
            return None
        counts = []
        honest = Runner.step

        def counted(session, *args):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                out = honest(session, *args)
            counts.append(sum("synchroniz" in str(w.message) for w in caught))
            return out

        Runner.step = counted  # type: ignore[method-assign]  # counts a round's host syncs; put back below
        torch.cuda.set_sync_debug_mode("warn")
        try:
            generate(self.target, self.prompt, self.drafter, self.params(gamma), vocab_size=self.spec["vocab"],
                     static=self.compiled)
        finally:
            torch.cuda.set_sync_debug_mode("default")
            Runner.step = honest  # type: ignore[method-assign]
        return statistics.mean(counts) if counts else None

    def run(self) -> dict:
        log, t0 = self.log, time.perf_counter()
        log(f"built target {model_mib(self.target):.0f} MiB and draft {model_mib(self.draft):.0f} MiB "
            f"in {self.build_seconds:.1f} s")
        gammas = self.spec["gammas"]
        warm = self.compiled.warm_up(self.drafter, gammas,
                                     lambda done, total, what: log(f"  compiling [{done}/{total}] {what}"))
        log(f"compiled in {self.compiled.compile_seconds:.1f} s (warm-up {warm:.1f} s)")
        self.eager.warm_up(self.drafter, gammas)
        for static in (None, self.eager, self.compiled):  # first calls: kernels, allocator, HF's own set-up
            self.speclens(1, self.drafter, static)
        self.hf(None)
        self.hf(1)
        base = {"hf": self.hf(None), "dynamic": self.speclens(1, None, None),
                "static": self.speclens(1, None, self.eager), "compiled": self.speclens(1, None, self.compiled)}
        log(f"target-only tok/s: HF {base['hf']['tps']:.1f}, SpecLens dynamic {base['dynamic']['tps']:.1f}, "
            f"static {base['static']['tps']:.1f}, compiled {base['compiled']['tps']:.1f}")
        rows = []
        for gamma in gammas:
            row: dict[str, Any] = {"gamma": gamma, "hf_assisted": self.hf(gamma)}
            for name, static in (("dynamic", None), ("static", self.eager), ("compiled", self.compiled)):
                run = self.speclens(gamma, self.drafter, static)
                run["host_overhead"] = self.busy_share(gamma, self.drafter, static, run["seconds_per_round"])
                row[name] = run
            for name, static in (("dynamic", None), ("compiled", self.compiled)):
                costs = measure_costs(self.target, self.draft, self.prompt, gamma, reps=5, static=static)
                row[f"costs_{name}"] = costs.to_json()
            row["syncs_per_round"] = self.syncs_per_round(gamma)
            rows.append(row)
            log(f"gamma {gamma}: HF assisted {row['hf_assisted']['tps']:.1f} tok/s, SpecLens dynamic "
                f"{row['dynamic']['tps']:.1f}, static {row['static']['tps']:.1f}, compiled {row['compiled']['tps']:.1f}; "
                f"c {row['costs_compiled']['c']:.3f}, verify cost {row['costs_compiled']['verify_cost']:.2f} "
                f"({time.perf_counter() - t0:.0f} s)")
        return {
            "meta": self.meta(), "compile_seconds": self.compiled.compile_seconds, "warm_up_seconds": warm,
            "build_seconds": self.build_seconds, "target_only": base, "rows": rows,
            "memory_mib": {
                "target_weights": model_mib(self.target), "draft_weights": model_mib(self.draft),
                "target_static_kv": kv_mib(self.compiled, self.target), "draft_static_kv": kv_mib(self.compiled, self.draft),
            },
            "seconds": time.perf_counter() - t0,
        }

    def meta(self) -> dict:
        name = torch.cuda.get_device_name(self.device) if self.device.type == "cuda" else "CPU"
        return {
            "device": str(self.device), "device_name": name, "dtype": str(self.dtype).removeprefix("torch."),
            "torch": torch.__version__, "transformers": transformers.__version__,
            "compile_backend": self.spec["backend"],
            "size": {k: self.spec[k] for k in ("vocab", "prompt", "new_tokens", "repeats")},
            "target_shape": self.spec["target"], "draft_shape": self.spec["draft"],
            "sampling": "T = 1, seed 0", "threads": torch.get_num_threads(),
        }


def kv_mib(decoder: StaticDecoder, model) -> float | None:
    sm = decoder._models.get(id(model))
    if sm is None:
        return None
    layers = [layer for layer in sm.cache.layers if layer.is_initialized]
    return sum(layer.keys.nbytes + layer.values.nbytes for layer in layers) / 2**20


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def markdown(result: dict) -> str:
    meta, base = result["meta"], result["target_only"]
    mem = result["memory_mib"]
    out = [
        "# SpecLens GPU mechanics check", "",
        f"{meta['device_name']} ({meta['device']}), {meta['dtype']}, torch {meta['torch']}, transformers "
        f"{meta['transformers']}; random-weight Llama target {mem['target_weights']:.0f} MiB and draft "
        f"{mem['draft_weights']:.0f} MiB, vocabulary {meta['size']['vocab']}; prompt {meta['size']['prompt']} "
        f"tokens, {meta['size']['new_tokens']} new, {meta['sampling']}, median of {meta['size']['repeats']}; "
        f"compile ({meta['compile_backend']}) {result['compile_seconds']:.1f} s; whole check {result['seconds']:.0f} s.",
        "",
        f"Target-only tok/s: HF {base['hf']['tps']:.1f}, SpecLens dynamic {base['dynamic']['tps']:.1f}, "
        f"static {base['static']['tps']:.1f}, static compiled {base['compiled']['tps']:.1f}.",
        "",
        "| γ | HF assisted | SpecLens dynamic | static | static compiled | compiled ÷ HF assisted | c (eager) "
        "| c (compiled) | verify cost (eager) | verify cost (compiled) | host share (dynamic) | host share (compiled) "
        "| syncs/round | α (loop ran) |",
        "|" + "---|" * 14,
    ]
    for r in result["rows"]:
        ce, cc = r["costs_dynamic"], r["costs_compiled"]
        syncs = "–" if r["syncs_per_round"] is None else f"{r['syncs_per_round']:.2f}"
        alpha = r["compiled"]["alpha"]
        out.append(
            f"| {r['gamma']} | {r['hf_assisted']['tps']:.1f} | {r['dynamic']['tps']:.1f} | {r['static']['tps']:.1f} "
            f"| {r['compiled']['tps']:.1f} | {r['compiled']['tps'] / r['hf_assisted']['tps']:.2f}× | {ce['c']:.3f} "
            f"| {cc['c']:.3f} | {ce['verify_cost']:.2f} | {cc['verify_cost']:.2f} | {_pct(r['dynamic']['host_overhead'])} "
            f"| {_pct(r['compiled']['host_overhead'])} | {syncs} | {'–' if alpha is None else f'{alpha:.2f}'} |"
        )
    kv = lambda x: "–" if x is None else f"{x:.0f}"  # noqa: E731
    out += ["", f"Memory per model: target weights {mem['target_weights']:.0f} MiB + static KV "
                f"{kv(mem['target_static_kv'])} MiB; draft weights {mem['draft_weights']:.0f} MiB + static KV "
                f"{kv(mem['draft_static_kv'])} MiB; peak allocated in the compiled γ=4 run "
                f"{_row(result, 4)['compiled']['peak_mib']:.0f} MiB.", "", *targets(result)]
    return "\n".join(out) + "\n"


def _row(result: dict, gamma: int) -> dict:
    return next((r for r in result["rows"] if r["gamma"] == gamma), result["rows"][-1])


def targets(result: dict) -> list[str]:
    """Issue 13's targets, each with the measured value; on a CPU they do not apply."""
    if not result["meta"]["device"].startswith("cuda"):
        return ["Targets apply to a GPU run; this was a CPU run of the mechanics only."]
    r4 = _row(result, 4)
    host = r4["compiled"]["host_overhead"]
    ratio = r4["compiled"]["tps"] / r4["hf_assisted"]["tps"]
    c = r4["costs_compiled"]["c"]

    def mark(ok: bool | None) -> str:
        return "n/a" if ok is None else "met" if ok else "NOT met"

    return [
        "Targets (γ = 4, compiled static path):",
        f"- host overhead ≤ {TARGETS['host_overhead']:.0%} of round time: {_pct(host)} — "
        f"{mark(None if host is None else host <= TARGETS['host_overhead'])}",
        f"- ≥ {TARGETS['compiled_over_hf_assisted']:.0f}× HF assisted tok/s: {ratio:.2f}× — "
        f"{mark(ratio >= TARGETS['compiled_over_hf_assisted'])}",
        f"- draft cost c ≤ {TARGETS['c']}: {c:.3f} — {mark(c <= TARGETS['c'])}",
    ]


def run_cli(args) -> int:
    """Entry point for `speclens bench --gpu-mechanics [--tiny] [--device ...] [--out ...]`."""
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    size = "tiny" if args.tiny else "full"
    if size == "full" and device.type != "cuda":
        print("warning: no CUDA device; the full-size check on a CPU takes very long (try --tiny)",
              file=sys.stderr)
    transformers.logging.set_verbosity_error()
    start = time.perf_counter()
    log = lambda msg: print(f"[{time.perf_counter() - start:6.1f} s] {msg}", file=sys.stderr, flush=True)  # noqa: E731
    result = Mechanics(size, device, log).run()
    result["meta"]["load_average"] = os.getloadavg()
    out = Path(args.out).expanduser()
    if out.name == "bench-results.json":
        out = out.with_name("gpu-mechanics.json")
    from app.bench.report import write_result

    write_result(out, result, markdown(result), log)
    return 0
