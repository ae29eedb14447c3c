"""llama.cpp's own binaries for `speclens bench --pair`: llama-bench (target-only) and llama-speculative-simple
(its draft-model speculation), built from the llama.cpp vendored in llama-cpp-python's sdist by
packaging/build_llama_cpp.sh into ~/.cache/speclens/llama.cpp/<version>/ (docs/real-pair.md).

Each call is a process of its own, started with an environment without OpenMP settings (as the worker's:
llama_cpp_runner.worker_env). Their numbers are their own: llama-bench's tg (decode from an empty context, no
prompt) and llama-speculative-simple's "decoded N tokens in S seconds" (after its prompt is processed), so
prefill is left out of both llama.cpp rows, where the SpecLens rows' clock includes it.

Torch-free: the parsers read captured outputs in the tests (tests/bench/fixtures/llama_cpp/).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .llama_cpp_runner import worker_env

VERSION = "0.3.36"  # llama-cpp-python whose vendored llama.cpp is built
BENCH, SPECULATIVE = "llama-bench", "llama-speculative-simple"
SCRIPT = Path(__file__).resolve().parents[2] / "packaging" / "build_llama_cpp.sh"
# The draft flags llama.cpp's maintainers give for Qwen2.5-Coder with its 0.5B as draft (draft up to 16,
# stop drafting below p 0.75), in the vendored version's names (--draft-max and --draft-p-min were renamed).
DRAFT_MAX, DRAFT_MIN, DRAFT_P_MIN = 16, 0, 0.75
SPEC_TYPE = "draft-simple"  # the vendored version speculates only with the types named (none by default)
COST_N = DRAFT_MAX + 1  # v(n) is priced at the longest round llama.cpp verifies


class LlamaCppCliError(RuntimeError):
    """A binary failed, or its output did not hold what the parser reads; the message has its output's end."""


def root(version: str = VERSION) -> Path:
    base = os.environ.get("SPECLENS_LLAMA_CPP_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".cache" / "speclens" / "llama.cpp") / version


@dataclass(frozen=True, slots=True)
class Binaries:
    bench: Path
    speculative: Path
    info: str  # build-info.txt: version, commit, flags, build seconds

    @classmethod
    def at(cls, folder: Path) -> Binaries | None:
        bench, spec, info = folder / "bin" / BENCH, folder / "bin" / SPECULATIVE, folder / "build-info.txt"
        if bench.is_file() and spec.is_file() and info.is_file():
            return cls(bench, spec, info.read_text(encoding="utf-8").strip())
        return None


def ensure_built(version: str = VERSION, log: Callable[[str], None] = lambda _: None,
                 python: str | None = None) -> Binaries:
    """The two binaries, built first (packaging/build_llama_cpp.sh, ~5 minutes on 2 cores) when absent."""
    found = Binaries.at(root(version))
    if found is not None:
        return found
    if not SCRIPT.is_file():
        raise LlamaCppCliError(f"{SCRIPT} is missing (it comes with a source checkout of SpecLens)")
    log(f"building llama.cpp's {BENCH} and {SPECULATIVE} (llama-cpp-python {version}'s vendored source) "
        f"into {root(version)}: about 5 minutes on 2 cores ...")
    import sys

    env = dict(os.environ, PYTHON=python or sys.executable)
    done = subprocess.run(["bash", str(SCRIPT), version], env=env, capture_output=True, text=True, check=False)
    found = Binaries.at(root(version))
    if done.returncode != 0 or found is None:
        raise LlamaCppCliError(f"building llama.cpp failed (status {done.returncode}): {done.stderr[-800:]}")
    return found


def run_binary(command: list[str], timeout: float = 900) -> str:
    """stdout and stderr together (llama.cpp logs to stderr); its status checked."""
    done = subprocess.run(command, env=worker_env(), capture_output=True, text=True, errors="replace",
                          timeout=timeout, check=False)
    out = done.stdout + "\n" + done.stderr
    if done.returncode != 0:
        raise LlamaCppCliError(f"{Path(command[0]).name} exited with status {done.returncode}: {out[-800:]}")
    return out


# ---- llama-bench ------------------------------------------------------------------------------------------

def bench_command(binary: Path, models: list[Path], threads: int, n_gen: int, n_prompt: int = 0,
                  reps: int = 1) -> list[str]:
    """llama-bench on each model: pp n_prompt (0: none) and tg n_gen, `reps` repetitions, JSON out."""
    cmd = [str(binary)]
    for model in models:
        cmd += ["-m", str(model)]
    return cmd + ["-p", str(n_prompt), "-n", str(n_gen), "-t", str(threads), "-r", str(reps), "-o", "json"]


def parse_bench(text: str) -> list[dict]:
    """llama-bench's -o json tests: [{"model", "n_prompt", "n_gen", "tokens_per_second", "seconds", "build"}]
    (seconds: the mean of one test's time; tokens/s: its mean over repetitions)."""
    start = text.find("[")
    if start < 0:
        raise LlamaCppCliError(f"llama-bench: no JSON in its output: {text[-400:]}")
    try:  # the JSON list from its first "[" on (its log lines may follow it)
        tests, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        raise LlamaCppCliError(f"llama-bench: unreadable JSON ({exc}): {text[-400:]}") from None
    return [{"model": Path(str(t.get("model_filename", ""))).name, "n_prompt": int(t["n_prompt"]),
             "n_gen": int(t["n_gen"]), "tokens_per_second": float(t["avg_ts"]), "seconds": float(t["avg_ns"]) / 1e9,
             "threads": t.get("n_threads"),
             "build": f"{t.get('build_commit', '?')} (build {t.get('build_number', '?')})"} for t in tests]


def target_only(binaries: Binaries, target: Path, threads: int, n_gen: int) -> dict:
    """One llama-bench tg run of the target: {"tokens", "seconds", "tokens_per_second", "build"}."""
    (test,) = [t for t in parse_bench(run_binary(bench_command(binaries.bench, [target], threads, n_gen)))
               if t["n_gen"] > 0]
    return {"tokens": test["n_gen"], "seconds": test["n_gen"] / test["tokens_per_second"],
            "tokens_per_second": test["tokens_per_second"], "build": test["build"]}


def costs(binaries: Binaries, target: Path, draft: Path, threads: int, n: int = COST_N, reps: int = 3) -> dict:
    """llama.cpp's c and v(n) from llama-bench on both files: c = the draft's tg step ÷ the target's, v(n) = the
    target's pp n time ÷ its tg step (from an empty context, as llama-bench runs; mean over reps)."""
    tests = parse_bench(run_binary(bench_command(binaries.bench, [target, draft], threads, 16, n, reps)))
    return costs_from(tests, target.name, draft.name, n)


def costs_from(tests: list[dict], target: str, draft: str, n: int) -> dict:
    def ts(model: str, prompt: int, gen: int) -> float:
        return next(t["tokens_per_second"] for t in tests if t["model"] == model and t["n_prompt"] == prompt
                    and t["n_gen"] == gen)

    gen = next(t["n_gen"] for t in tests if t["n_gen"] > 0)
    tg_target, tg_draft, pp_target = ts(target, 0, gen), ts(draft, 0, gen), ts(target, n, 0)
    step = 1 / tg_target
    return {"c": (1 / tg_draft) / step, "verify_n": n, "verify_cost": (n / pp_target) / step,
            "target_step_ms": 1e3 * step, "draft_step_ms": 1e3 / tg_draft}


# ---- llama-speculative-simple -------------------------------------------------------------------------------

def speculative_command(binary: Path, target: Path, draft: Path, prompt_file: Path, threads: int, n_predict: int,
                        temperature: float, seed: int, n_ctx: int) -> list[str]:
    """Draft-model speculation as llama.cpp's maintainers run Qwen2.5-Coder: up to DRAFT_MAX drafted, drafting
    stopped below DRAFT_P_MIN; the prompt from a file (chat template already applied, special tokens parsed)."""
    return [str(binary), "-m", str(target), "-md", str(draft), "-f", str(prompt_file), "-n", str(n_predict),
            "-t", str(threads), "-td", str(threads), "-c", str(n_ctx), "--temp", f"{temperature:g}",
            "--seed", str(seed), "--spec-type", SPEC_TYPE, "--spec-draft-n-max", str(DRAFT_MAX), "--spec-draft-n-min", str(DRAFT_MIN),
            "--spec-draft-p-min", f"{DRAFT_P_MIN:g}"]


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_SPEC_FIELDS = {
    "decoded": re.compile(rf"decoded\s+(\d+) tokens in\s+{_NUM} seconds, speed:\s+{_NUM} t/s"),
    "encoded": re.compile(rf"encoded\s+(\d+) tokens in\s+{_NUM} seconds"),
    "n_draft": re.compile(r"n_draft\s*=\s*(\d+)"),
    "n_predict": re.compile(r"n_predict\s*=\s*(\d+)"),
    "n_drafted": re.compile(r"n_drafted\s*=\s*(\d+)"),
    "n_accept": re.compile(r"n_accept\s*=\s*(\d+)"),
}


def parse_speculative(text: str) -> dict:
    """llama-speculative-simple's summary: {"tokens", "seconds", "tokens_per_second", "prompt_tokens",
    "prompt_seconds", "draft_max", "drafted", "accepted", "rounds", "tokens_per_round", "acceptance"}.
    Every round yields its accepted drafts plus one target token, so rounds = tokens − accepted."""
    found = {}
    for key, pattern in _SPEC_FIELDS.items():
        match = pattern.search(text)
        if match is None:
            raise LlamaCppCliError(f"{SPECULATIVE}: no '{key}' in its output: {text[-600:]}")
        found[key] = match.groups()
    tokens, seconds, tps = int(found["decoded"][0]), float(found["decoded"][1]), float(found["decoded"][2])
    drafted, accepted = int(found["n_drafted"][0]), int(found["n_accept"][0])
    rounds = tokens - accepted
    return {"tokens": tokens, "seconds": seconds, "tokens_per_second": tps,
            "prompt_tokens": int(found["encoded"][0]), "prompt_seconds": float(found["encoded"][1]),
            "draft_max": int(found["n_draft"][0]), "drafted": drafted, "accepted": accepted, "rounds": rounds,
            "tokens_per_round": tokens / rounds if rounds > 0 else None,
            "acceptance": accepted / drafted if drafted else None}


def speculative(binaries: Binaries, target: Path, draft: Path, prompt: str, threads: int, n_predict: int,
                temperature: float, seed: int) -> dict:
    """One llama-speculative-simple run on `prompt` (the chat-templated text), parsed."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as f:
        f.write(prompt + "\n")  # -f drops one trailing newline: the chat template's own "assistant\n" stays
    try:
        n_ctx = 4096  # the code suite's prompts and answers with room; llama.cpp checks the prompt fits
        return parse_speculative(run_binary(speculative_command(
            binaries.speculative, target, draft, Path(f.name), threads, n_predict, temperature, seed, n_ctx)))
    finally:
        os.unlink(f.name)
