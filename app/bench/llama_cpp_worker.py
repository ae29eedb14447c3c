"""llama.cpp in a process of its own, for `speclens bench`: one JSON object per line in, one per line out.

Run as a script (`python -I app/bench/llama_cpp_worker.py`), never imported by SpecLens and importing
nothing of it: SpecLens sets OMP_WAIT_POLICY=PASSIVE before any OpenMP runtime starts, and llama.cpp's
OpenMP threads then sleep between ops (docs/engine-notes.md has the figures). The parent hands it an
environment without that variable, so llama.cpp starts as it does standalone. Only the standard library
and the optional `llama_cpp` package (llama-cpp-python) are used.

Protocol (app/bench/llama_cpp_runner.py speaks the other side):
- on start it sends {"ready": true, "version", "system_info", "omp_wait_policy"} or
  {"ready": false, "missing": "llama_cpp", "error"} and exits;
- {"op": "load", "model", "threads", "n_ctx", "lookup_ngram", "lookup_tokens"} -> {"ok": true, "load_seconds"};
- {"op": "generate", "mode": "target-only" | "prompt lookup", "ids", "max_new_tokens", "stop", "temperature",
  "top_k", "top_p", "seed"} -> {"ok": true, "tokens", "seconds", "peak_mib"};
- {"op": "verify", "ids", "ns", "reps"} -> {"ok": true, "last": [s], "all": [s]}: one pass over n new tokens
  after ids[:-1] is cached, with the last row's logits and with every row's, minimum over reps;
- {"op": "quit"} or end of input ends it. A failed request answers {"ok": false, "error"}.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

TARGET_ONLY, PROMPT_LOOKUP = "target-only", "prompt lookup"  # the protocol's modes: runners' names of the rows


def _send(stream, message: dict) -> None:
    stream.write(json.dumps(message) + "\n")
    stream.flush()


def _peak_mib() -> float | None:
    """This process's peak RSS so far, or None where it cannot be read. Linux's VmHWM, not ru_maxrss: that
    one survives fork and exec, so it would report the SpecLens parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere


class Worker:
    """The two models of one load: plain decoding, and llama-cpp-python's own prompt-lookup speculation."""

    def __init__(self, llama_cpp) -> None:
        self.llama_cpp = llama_cpp
        self.models: dict = {}

    def load(self, model: str, threads: int, n_ctx: int, lookup_ngram: int, lookup_tokens: int) -> dict:
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        t0 = time.perf_counter()
        common = {"model_path": model, "n_threads": threads, "n_threads_batch": threads, "n_ctx": n_ctx,
                  "verbose": False}
        self.models = {
            TARGET_ONLY: self.llama_cpp.Llama(**common),
            # A draft model makes the Llama keep every row's logits, which its verification reads.
            PROMPT_LOOKUP: self.llama_cpp.Llama(**common, draft_model=LlamaPromptLookupDecoding(
                max_ngram_size=lookup_ngram, num_pred_tokens=lookup_tokens)),
        }
        return {"load_seconds": time.perf_counter() - t0}

    def generate(self, mode: str, ids: list[int], max_new_tokens: int, stop: list[int], temperature: float,
                 top_k: int, top_p: float, seed: int) -> dict:
        """Prefill included; the answer is detokenised token by token, as SpecLens streams its text."""
        llm = self.models[mode]
        llm.reset()  # generate() would otherwise reuse a cached prefix and skip the prefill
        llm.set_seed(seed)
        stops, tokens = set(stop), []
        t0 = time.perf_counter()
        for token in llm.generate(ids, temp=temperature, top_k=top_k, top_p=top_p, min_p=0.0, typical_p=1.0,
                                  repeat_penalty=1.0, reset=True):
            tokens.append(int(token))
            llm.detokenize([token])
            if token in stops or len(tokens) >= max_new_tokens:
                break
        seconds = time.perf_counter() - t0
        return {"tokens": tokens, "seconds": seconds, "peak_mib": _peak_mib()}

    def verify(self, ids: list[int], ns: list[int], reps: int) -> dict:
        """Seconds of one llama_decode of n copies of ids[-1] after ids[:-1], per n, with the last row's
        logits and with every row's (what verification needs); the first round warms up and is not kept."""
        llm = self.models[TARGET_ONLY]
        llm.reset()
        llm.eval(ids[:-1])
        held = llm.n_tokens
        best = {"last": [float("inf")] * len(ns), "all": [float("inf")] * len(ns)}
        for rep in range(reps + 1):
            for i, n in enumerate(ns):
                for key in best:
                    llm._ctx.kv_cache_seq_rm(-1, held, -1)
                    llm._batch.set_batch(batch=[ids[-1]] * n, n_past=held, logits_all=key == "all")
                    t0 = time.perf_counter()
                    llm._ctx.decode(llm._batch)
                    self.llama_cpp.llama_synchronize(llm.ctx)
                    if rep:
                        best[key][i] = min(best[key][i], time.perf_counter() - t0)
        llm._ctx.kv_cache_seq_rm(-1, held, -1)
        return best

    def logits(self, ids: list[int], path: str) -> dict:
        """Every row's logits for the sequence ids (one llama_decode from an empty cache), written to `path`
        as a float32 .npy [len(ids), vocabulary]: the fidelity measure reads them beside SpecLens's own."""
        import numpy as np

        llm = self.models[TARGET_ONLY]
        llm.reset()
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        llm._batch.set_batch(batch=ids, n_past=0, logits_all=True)
        llm._ctx.decode(llm._batch)
        self.llama_cpp.llama_synchronize(llm.ctx)
        vocab = self.llama_cpp.llama_n_vocab(self.llama_cpp.llama_model_get_vocab(llm.model))
        rows = np.ctypeslib.as_array(self.llama_cpp.llama_get_logits(llm.ctx), shape=(len(ids), vocab))
        np.save(path, np.array(rows, dtype=np.float32))
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        return {"rows": len(ids), "vocab": int(vocab)}


def main() -> int:
    # Protocol lines go to a private copy of stdout; fd 1 itself goes to stderr, so anything the C library
    # prints cannot corrupt them.
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    here = Path(__file__).resolve().parent  # without -I the script's folder would shadow `llama_cpp`
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    try:
        import llama_cpp
    except ImportError as exc:
        _send(proto, {"ready": False, "missing": "llama_cpp", "error": str(exc)})
        return 0
    _send(proto, {"ready": True, "version": getattr(llama_cpp, "__version__", "?"),
                  "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
                  "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY")})
    worker = Worker(llama_cpp)
    handlers: dict[str, Callable[..., dict]] = {"load": worker.load, "generate": worker.generate, "verify": worker.verify,
                                                "logits": worker.logits}
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op", None)
        if op == "quit":
            break
        try:
            reply = {"ok": True} | handlers[op](**request)
        except Exception as exc:  # the parent reports it; the process stays up for the next request
            reply = {"ok": False, "error": f"{op}: {type(exc).__name__}: {exc}"}
        _send(proto, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main())
