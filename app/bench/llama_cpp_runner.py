"""The benchmark's side of the llama.cpp worker (app/bench/llama_cpp_worker.py): start it in a process of its
own with a clean environment, ask it for timed generations and v(n), stop it.

llama.cpp in SpecLens's process reads 36 tok/s where standalone it reads 87: SpecLens's OMP_WAIT_POLICY=PASSIVE
puts its OpenMP threads to sleep between ops. So the worker runs with `python -I` (no SpecLens on its path)
and an environment without the variables that steer an OpenMP runtime. llama-cpp-python is not a SpecLens
dependency; when it is missing the worker says so and the benchmark prints INSTALL_HINT.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

WORKER = Path(__file__).with_name("llama_cpp_worker.py")
# The AVX-512 build the 2-core EPYC VMs need (a native build crashed there with an illegal instruction).
INSTALL_HINT = ('not installed; to compare, install it from source (about 10 minutes): CMAKE_ARGS="-DGGML_NATIVE=OFF '
                '-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON -DGGML_AVX2=ON -DGGML_FMA=ON '
                '-DGGML_F16C=ON" python -m pip install --no-binary llama-cpp-python llama-cpp-python')
OPENMP_PREFIXES = ("OMP_", "GOMP_", "KMP_")  # libgomp's and LLVM/Intel OpenMP's settings
VERIFY_NS = (1, 2, 3, 5, 9, 17)
VERIFY_REPS = 5


class LlamaCppError(RuntimeError):
    """The worker failed or went away; the message carries the end of its stderr."""


def worker_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The parent's environment without OMP_WAIT_POLICY and the other OpenMP settings SpecLens may have set."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in environ.items() if not k.startswith(OPENMP_PREFIXES)}


def worker_command() -> list[str]:
    """This interpreter, isolated (-I: no PYTHON* variables, no script folder on the path), on the worker."""
    return [sys.executable, "-I", str(WORKER)]


class LlamaCppWorker:
    """One worker process. `hello` is its first message: whether llama_cpp imported, its version and build."""

    def __init__(self, command: list[str] | None = None, env: Mapping[str, str] | None = None) -> None:
        # open while the worker runs (close() ends both): a pipe nobody reads could fill and block it
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._proc = subprocess.Popen(
            command or worker_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=dict(worker_env() if env is None else env), text=True, encoding="utf-8", bufsize=1)
        assert self._proc.stdin is not None and self._proc.stdout is not None  # both are pipes
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        self.hello = self._read()

    def _read(self) -> dict:
        line = self._stdout.readline()
        if not line:
            self._proc.wait()
            raise LlamaCppError(f"the llama.cpp worker exited (status {self._proc.returncode}){self._stderr_tail()}")
        return json.loads(line)

    def _stderr_tail(self, chars: int = 600) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().strip()
        return f": {text[-chars:]}" if text else ""

    def request(self, op: str, **fields) -> dict:
        try:
            self._stdin.write(json.dumps({"op": op, **fields}) + "\n")
            self._stdin.flush()
        except BrokenPipeError:
            pass  # it died: _read reports how
        reply = self._read()
        if not reply.get("ok"):
            raise LlamaCppError(f"llama.cpp worker: {reply.get('error', reply)}{self._stderr_tail()}")
        return reply

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._stdin.write(json.dumps({"op": "quit"}) + "\n")
                self._stdin.close()
                self._proc.wait(timeout=10)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()
        self._stdout.close()
        self._stderr.close()

    def __enter__(self) -> LlamaCppWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start(gguf: Path, threads: int, n_ctx: int, lookup_ngram: int, lookup_tokens: int,
          command: list[str] | None = None) -> tuple[LlamaCppWorker | None, dict]:
    """(a loaded worker, what it is) or (None, {"unavailable": why}) when llama_cpp is missing or fails to load.
    Its prompt lookup matches up to `lookup_ngram` tokens and proposes `lookup_tokens`."""
    if getattr(sys, "frozen", False) and command is None:
        return None, {"unavailable": "needs a Python install with llama-cpp-python (not the packaged app)"}
    worker = LlamaCppWorker(command)
    if not worker.hello.get("ready"):
        worker.close()
        return None, {"unavailable": INSTALL_HINT, "error": worker.hello.get("error")}
    try:
        loaded = worker.request("load", model=str(gguf), threads=threads, n_ctx=n_ctx, lookup_ngram=lookup_ngram,
                                lookup_tokens=lookup_tokens)
    except LlamaCppError as exc:
        worker.close()
        return None, {"unavailable": f"failed to load {gguf.name}: {exc}"}
    info = {k: worker.hello.get(k) for k in ("version", "system_info", "omp_wait_policy")}
    return worker, info | {"gguf": gguf.name, "threads": threads, "n_ctx": n_ctx,
                           "load_seconds": loaded["load_seconds"],
                           "prompt_lookup": {"max_ngram": lookup_ngram, "num_pred_tokens": lookup_tokens}}


def generate(worker: LlamaCppWorker, mode: str, ids: list[int], params, stop: list[int] | tuple[int, ...]) -> dict:
    """One timed generation (prefill included): {"tokens", "seconds", "peak_mib"}. llama.cpp samples with its
    own chain (top-k, top-p, then temperature; min-p off), the same distribution when top-k/top-p are off."""
    return worker.request("generate", mode=mode, ids=ids, max_new_tokens=params.max_new_tokens, stop=list(stop),
                          temperature=params.temperature, top_k=params.top_k, top_p=params.top_p,
                          seed=params.seed or 0)


def verify_row(worker: LlamaCppWorker, ids: list[int], ns=VERIFY_NS, reps: int = VERIFY_REPS) -> dict:
    """One step (last row's logits, n = 1) and v(n) = t(n) / step with the last row's logits and with every
    row's, after ids[:-1] is cached (minimum over reps)."""
    reply = worker.request("verify", ids=ids, ns=list(ns), reps=reps)
    step = reply["last"][0]
    return {"n": list(ns), "step_ms": 1e3 * step, "v_last": [s / step for s in reply["last"]],
            "v_all": [s / step for s in reply["all"]], "context": len(ids) - 1}


def gguf_of(target) -> Path | None:
    """The GGUF file a loaded target came from (the embedded default or a .gguf path), else None."""
    if target.extra.get("source") in ("embedded", "gguf") and target.extra.get("path"):
        return Path(target.extra["path"])
    return None
