"""Real pairs priced on the native path (`speclens bench --large-target`): a SmolLM2-1.7B-shaped and a
Llama-2-7B-shaped target of random Q4_K blocks, written on the spot (random_gguf.py), read straight onto
the kernel (native/direct.py), with the embedded model as their draft. Per target: one step against its
bytes ÷ the triad bandwidth, v(n) with two activation digits and with one, the draft's cost c, the
speedup the cost model predicts at α 0.5, 0.6 and 0.7, the first load's peak memory against the file's
size (in a process of its own), and llama.cpp's step and v(n) on the same file when it is installed.
Random weights say nothing of α: the α's are the ones a trained draft would need.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from app.bench import cpu_costs, random_gguf
from app.engine.policy.cost import DrafterProfile, VerifyCosts, best_gamma
from app.paths import user_cache_dir

ALPHAS = (0.5, 0.6, 0.7)
RSS_PROBE = """
import json, sys
def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024
from app.native import direct
before = status("VmRSS:")
index, config = direct.read(__import__("pathlib").Path(sys.argv[1]))
model = direct.build(index.path, index, config, None)
print(json.dumps({"baseline": before, "peak": status("VmHWM:"), "after": status("VmRSS:")}))
"""


def first_load_memory(gguf: Path) -> dict:
    """The peak resident memory of a first native load of `gguf` in a fresh process (Linux: /proc), the
    process's own before the load (Python, torch), and the file's size."""
    done = subprocess.run([sys.executable, "-c", RSS_PROBE, str(gguf)], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0 or not done.stdout.strip():
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no output"}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    size = gguf.stat().st_size
    return out | {"file": size, "peak_over_file": out["peak"] / size, "load_over_file": (out["peak"] - out["baseline"]) / size}


def predicted(v: list[float], c: float) -> dict[str, dict]:
    """The cost model's best γ and speedup at each α, for a draft of cost c against this v(n)."""
    verify = VerifyCosts(tuple(v))
    out = {}
    for alpha in ALPHAS:
        gamma, speed = best_gamma(DrafterProfile("draft", "draft", c, alpha), verify)
        out[f"{alpha:.1f}"] = {"gamma": gamma, "speedup": speed}
    return out


def price(name: str, draft, ids: torch.Tensor, triad: float, reps: int, llama_threads: int | None) -> dict:
    """One shape: written, measured, deleted."""
    from app.models.embedded import embedded_gguf
    from app.native import direct
    from app.native.descriptor import Digits
    from app.native.model import with_digits

    folder = Path(tempfile.mkdtemp(prefix="speclens-large-", dir=user_cache_dir()))
    try:
        gguf = random_gguf.write(folder / f"random-{name}.gguf", random_gguf.SHAPES[name], embedded_gguf())
        memory = first_load_memory(gguf)
        index, config = direct.read(gguf)
        model = direct.build(gguf, index, config, None)
        rows = {"2 digits": cpu_costs.bandwidth_row(model, ids, triad, reps)}
        one = with_digits(model, Digits.all(1))
        rows["1 digit"] = cpu_costs.bandwidth_row(one, ids, triad, reps)
        draft_step = cpu_costs.verify_curve(draft.model, ids, 1, reps + 1)[0]
        for row in rows.values():
            row["c"] = draft_step * 1e3 / row["step_ms"]
            row["predicted"] = predicted(row["v"], row["c"])
        out = {"shape": random_gguf.SHAPES[name], "file_bytes": gguf.stat().st_size, "kernels": model.kernels,
               "parameters": sum(info.elements for info in index.tensors.values()), "rows": rows,
               "first_load_memory": memory, "draft": draft.name, "draft_kernels": draft.kernels}
        del model, one
        out["llama_cpp"] = _llama_cpp(gguf, ids, llama_threads)
        return out
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def _llama_cpp(gguf: Path, ids: torch.Tensor, threads: int | None) -> dict | None:
    """llama.cpp's step and v(n) on the same file and probe, in its own process; None where it is not installed."""
    from app.bench import llama_cpp_runner

    try:
        worker, info = llama_cpp_runner.start(gguf, threads or torch.get_num_threads(), n_ctx=512, lookup_ngram=0,
                                              lookup_tokens=0)
    except llama_cpp_runner.LlamaCppError as exc:
        return {"unavailable": str(exc).splitlines()[0]}
    if worker is None:
        return info
    with worker:
        return llama_cpp_runner.verify_row(worker, ids.tolist()) | {"version": info.get("version")}


def large_targets(draft, ids: torch.Tensor, triad: float, reps: int = 2, shapes=tuple(random_gguf.SHAPES),
                  llama_threads: int | None = None) -> dict:
    return {name: price(name, draft, ids, triad, reps, llama_threads) for name in shapes}
