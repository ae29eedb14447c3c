"""The native path's distance from float32 beside llama.cpp's, on the same GGUF and the same tokens
(`speclens bench --quality`): every held-out token of native/quality.py's measure (chat answers and text,
about 5,300 positions for the embedded model), top-1 agreement and mean KL(float32 ‖ ·) with 95% intervals,
for the native kernel with two activation digits, with the digits the load chose, with one digit everywhere,
and for llama.cpp (every row's logits, in a process of its own). A native variant is at least as close to
float32 as llama.cpp where its KL is no larger and its agreement no smaller.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import torch

from app.native import quality
from app.native.backend import NativeBackend
from app.native.build import assemble
from app.native.descriptor import TWO_DIGITS, Digits


def llama_cpp_logits(worker, folder: Path) -> quality.Logits:
    """llama.cpp's every-row logits of a sequence, through the worker (written to a file, read back)."""
    def run(ids: torch.Tensor) -> torch.Tensor:
        path = folder / "logits.npy"
        worker.request("logits", ids=[int(t) for t in ids], path=str(path))
        return torch.from_numpy(np.load(path))
    return run


def measure(target, threads: int | None = None, budget: int | None = None) -> dict:
    """{variant: Fidelity as a dict} for a native `target` (a LoadedModel from a GGUF), and llama.cpp's where
    it is installed ({"llama.cpp": {"unavailable": why}} where not)."""
    from app.bench import llama_cpp_runner
    from app.models import load_model

    reference = load_model(target.spec, device="cpu", dtype=torch.float32, kernels="torch").model
    weights = target.model.cache_backend.weights
    chosen = weights.digits

    def native(d: Digits) -> quality.Logits:
        return quality.native_logits(NativeBackend(assemble(target.model.config, weights.parts, weights.build, d)))

    variants = {"native, 2 digits": TWO_DIGITS, "native, 1 digit": Digits.all(1)}
    if chosen not in variants.values():
        variants[f"native, {chosen.label()} (chosen at load)"] = chosen
    candidates = {name: native(d) for name, d in variants.items()}
    seqs = quality.sequences(target.tokenizer, budget)
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="speclens-fidelity-") as tmp:
        gguf = llama_cpp_runner.gguf_of(target)
        worker, info = (llama_cpp_runner.start(gguf, threads or torch.get_num_threads(), n_ctx=1024, lookup_ngram=0,
                                               lookup_tokens=0) if gguf is not None else (None, {"unavailable": "no GGUF"}))
        try:
            if worker is not None:
                candidates["llama.cpp"] = llama_cpp_logits(worker, Path(tmp))
            rows = quality.per_sequence(quality.fp32_logits(reference), candidates, seqs, target.vocab_size)
        finally:
            if worker is not None:
                worker.close()
    for name, per in rows.items():
        f = quality.summarize(per, variants.get(name, TWO_DIGITS))
        out[name] = {"tokens": f.tokens, "agreement": f.agreement, "agreement_ci": list(f.agreement_ci), "kl": f.kl,
                     "kl_ci": list(f.kl_ci)}
    if worker is None:
        out["llama.cpp"] = info
    return out


def lines(table: dict) -> list[str]:
    """The Markdown table, and which native variants are at least as close to float32 as llama.cpp."""
    out = ["| | tokens | top-1 agreement with fp32 [95%] | mean KL(fp32 ‖ ·) nats [95%] |", "|---|---|---|---|"]
    for name, f in table.items():
        if "kl" not in f:
            out.append(f"| {name} | – | {f.get('unavailable', '?')} | |")
            continue
        lo, hi = f["agreement_ci"]
        out.append(f"| {name} | {f['tokens']:,} | {100 * f['agreement']:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}] | "
                   f"{f['kl']:.5f} [{f['kl_ci'][0]:.5f}, {f['kl_ci'][1]:.5f}] |")
    llama = table.get("llama.cpp", {})
    if "kl" in llama:
        close = [n for n, f in table.items() if n != "llama.cpp" and "kl" in f and f["kl"] <= llama["kl"]
                 and f["agreement"] >= llama["agreement"]]
        out += ["", f"At least as close to float32 as llama.cpp (KL no larger, agreement no smaller): "
                    f"{', '.join(close) or 'none'}."]
    return out
