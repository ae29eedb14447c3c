"""llama.cpp's rows from a process of its own: the JSON-lines protocol, the clean environment, the paired ratios
and the report's block, against a fake worker that is a real subprocess with known timings; and the real
worker when llama-cpp-python is installed (slow). No timing asserts on measured SpecLens runs."""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path

import pytest

from app.bench import llama_cpp_runner
from app.bench.llama_cpp_runner import (
    INSTALL_HINT,
    LlamaCppError,
    LlamaCppWorker,
    start,
    verify_row,
    worker_env,
)
from app.bench.prompts import load_suite
from app.bench.report import markdown
from app.bench.runners import LLAMA_CPP, PROMPT_LOOKUP, TARGET_ONLY, Config
from app.bench.suite import run_setting, summarize_setting
from app.cli import main
from app.engine import DecodeParams

FAKE = Path(__file__).with_name("fake_llama_cpp_worker.py")
RATE = 80.0  # the fake's target-only tokens/s; its prompt lookup reports 1.5×
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))
from tiny_gguf import write_tiny_gguf  # noqa: E402


def fake(*args: str) -> list[str]:
    return [sys.executable, str(FAKE), "--rate", str(RATE), *args]


def test_worker_env_drops_omp_wait_policy_and_every_openmp_setting(monkeypatch):
    for name in [n for n in os.environ if n.startswith(("OMP_", "GOMP_", "KMP_"))]:
        monkeypatch.delenv(name)  # CI's own OpenMP settings (OMP_NUM_THREADS) would join the twin's set
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # as app/__init__ sets it for SpecLens's own torch
    monkeypatch.setenv("GOMP_SPINCOUNT", "0")
    monkeypatch.setenv("KMP_BLOCKTIME", "0")
    monkeypatch.setenv("SPECLENS_PROBE", "kept")
    with LlamaCppWorker(fake()) as worker:
        assert worker.hello["omp_wait_policy"] is None
        assert worker.hello["openmp_env"] == {}
    assert worker_env()["SPECLENS_PROBE"] == "kept" and "OMP_WAIT_POLICY" not in worker_env()
    # Twin: handed the parent's environment unchanged, the same worker sees PASSIVE, so the check above can fail.
    with LlamaCppWorker(fake(), env=dict(os.environ)) as leaky:
        assert leaky.hello["omp_wait_policy"] == "PASSIVE"
        assert set(leaky.hello["openmp_env"]) == {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME"}


def test_the_real_worker_imports_nothing_of_speclens():
    """It runs under `python -I` as a script: the standard library, llama_cpp and numpy (llama_cpp's own
    dependency, which holds its logits) only, so SpecLens's OMP_WAIT_POLICY (set in app/__init__) is never set
    in its process."""
    tree = ast.parse(llama_cpp_runner.WORKER.read_text())
    modules = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names}
    modules |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert modules - set(sys.stdlib_module_names) == {"llama_cpp", "numpy"}
    assert llama_cpp_runner.worker_command()[1:] == ["-I", str(llama_cpp_runner.WORKER)]


def test_protocol_round_trip_with_a_worker_process(tmp_path):
    worker, info = start(tmp_path / "model.gguf", 2, 256, 3, 4, command=fake())
    try:
        assert info["version"] == "fake" and info["threads"] == 2 and info["gguf"] == "model.gguf"
        assert info["prompt_lookup"] == {"max_ngram": 3, "num_pred_tokens": 4}
        params = DecodeParams(gamma=4, temperature=0.0, max_new_tokens=3, seed=0)
        out = llama_cpp_runner.generate(worker, TARGET_ONLY, [5, 6, 7, 8], params, stop=[])
        assert out["tokens"] == [8, 7, 6] and out["seconds"] == pytest.approx(3 / RATE)
        assert llama_cpp_runner.generate(worker, TARGET_ONLY, [5, 6, 7, 8], params, stop=[7])["tokens"] == [8, 7]
        row = verify_row(worker, [1, 2, 3], ns=(1, 3, 9), reps=2)
        assert row["step_ms"] == pytest.approx(10.0) and row["context"] == 2
        assert row["v_last"] == pytest.approx([1.0, 2.0, 5.0]) and row["v_all"] == pytest.approx([1.0, 3.0, 9.0])
        with pytest.raises(LlamaCppError, match="unknown"):
            worker.request("bogus")
    finally:
        worker.close()
    with pytest.raises(LlamaCppError, match="exited"):  # a worker that is gone says so, not a hang
        LlamaCppWorker([sys.executable, "-c", "import sys; sys.stderr.write('boom')"])


def test_a_missing_package_says_how_to_install_it(tmp_path):
    worker, info = start(tmp_path / "model.gguf", 1, 256, 3, 4, command=fake("--missing"))
    assert worker is None and info["unavailable"] == INSTALL_HINT and "llama_cpp" in info["error"]
    assert "CMAKE_ARGS" in INSTALL_HINT and "-DGGML_AVX512=ON" in INSTALL_HINT
    text = markdown({"meta": _meta(), "settings": [], "llama_cpp": info})
    assert f"llama.cpp: {INSTALL_HINT}" in text


def _meta() -> dict:
    return {"target": "t", "draft": "d", "gamma": 3, "max_new_tokens": 8, "repeats": 2, "prompts": "tiny",
            "n_prompts": 2, "device": "cpu", "threads": 1, "torch": "x", "transformers": "y",
            "target_kernels": "fp32"}


@pytest.fixture(scope="module")
def fake_llama_cpp(tmp_path_factory):
    worker, info = start(tmp_path_factory.mktemp("gguf") / "model.gguf", 1, 256, 3, 3, command=fake())
    yield worker, info
    worker.close()


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_llama_cpp_rows_interleave_and_ratios_are_paired(tiny_pair, tiny_suite, fake_llama_cpp, temperature):
    worker, info = fake_llama_cpp
    pair = dataclasses.replace(tiny_pair, llama_cpp=worker)
    params = DecodeParams(gamma=3, temperature=temperature, max_new_tokens=8, seed=3)
    summary = json.loads(json.dumps(summarize_setting(run_setting(pair, load_suite(str(tiny_suite)), params, 2))))
    rows = {row["config"]: row for row in summary["configs"]}
    lt, lp = Config(LLAMA_CPP, TARGET_ONLY).name, Config(LLAMA_CPP, PROMPT_LOOKUP).name
    assert [name for name in rows if name.startswith("llama.cpp")] == [lt, lp] == ["llama.cpp target-only",
                                                                                    "llama.cpp prompt lookup"]
    # The worker's own clock: total tokens ÷ total seconds per repeat is its rate exactly.
    assert rows[lt]["tokens_per_second"]["per_repeat"] == pytest.approx([RATE, RATE])
    assert rows[lp]["speedup"] == pytest.approx(1.5)  # over llama.cpp's own target-only, paired
    assert rows[lt]["peak_memory_mib"] == 42.0 and rows[lt]["alpha"] is None
    speclens = rows["SpecLens target-only"]["tokens_per_second"]["per_repeat"]
    lookup = rows["SpecLens prompt lookup"]["tokens_per_second"]["per_repeat"]
    ratios = summary["ratios"]
    assert ratios["speclens_target_only_over_llama_cpp"] == pytest.approx(statistics.median(s / RATE for s in speclens))
    assert ratios["speclens_prompt_lookup_over_llama_cpp_prompt_lookup"] == pytest.approx(
        statistics.median(s / (1.5 * RATE) for s in lookup))
    assert "speclens_auto_over_llama_cpp" not in ratios  # the tiny pair has no auto row
    assert ratios["best_hf"].startswith("HF") and ratios["best_speclens"].startswith("SpecLens")
    assert set(summary["outputs"][lt]) == {"chat", "echo"}

    meta = _meta() | {"target_kernels": "fp32"}
    cpu = {"triad_gbps": 10.0, "rows": {"fp32": {"step_ms": 20.0, "v": [1.0 + 0.1 * i for i in range(17)],
                                                  "step_mib": 1, "gbps": 1, "floor_ms": 1, "over_floor": 1}},
           "llama_cpp": verify_row(worker, [1, 2, 3])}
    text = markdown({"meta": meta, "settings": [summary], "llama_cpp": info, "cpu": cpu})
    block = text.split("## llama.cpp on the same GGUF, prompts and threads", 1)[1]
    assert "llama-cpp-python fake on `model.gguf`, threads: 1" in block and "OMP_WAIT_POLICY there: unset" in block
    assert "| SpecLens (fp32), every row's logits | 20.0 | 1.00 1.10 1.20 1.40 1.80 2.60 |" in block
    assert "| llama.cpp, every row's logits (what verification needs) | 10.0 | 1.00 2.00 3.00 5.00 9.00 17.00 |" in block
    assert "| llama.cpp, last row's logits only | 10.0 | 1.00 1.50 2.00 3.00 5.00 9.00 |" in block
    assert "one step, SpecLens ÷ llama.cpp: **2.00×**" in block
    target_only = rows["SpecLens target-only"]["tokens_per_second"]["median"]
    assert (f"| {summary['setting']} | {RATE:.1f} | {1.5 * RATE:.1f} (1.50×) | {target_only:.1f} | – "
            f"| {ratios['speclens_target_only_over_llama_cpp']:.2f}× | – |") in block
    assert f"SpecLens target-only ÷ llama.cpp target-only: **{ratios['speclens_target_only_over_llama_cpp']:.2f}×**" in text


def test_cli_runs_llama_cpp_on_a_gguf_target_with_its_own_threads(tmp_path, monkeypatch, tiny_suite):
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(llama_cpp_runner, "worker_command", lambda: fake())  # a real process, the fake program
    gguf = write_tiny_gguf(tmp_path / "tiny.gguf")
    out = tmp_path / "res.json"
    code = main(["bench", "--target", str(gguf), "--draft", "prompt-lookup", "--prompts", str(tiny_suite),
                 "--repeats", "1", "--max-new-tokens", "6", "--temperature", "0", "--threads", "1",
                 "--llama-cpp-threads", "2", "--out", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["llama_cpp"]["threads"] == 2 and data["llama_cpp"]["omp_wait_policy"] is None
    assert data["cpu"]["llama_cpp"]["n"] == [1, 2, 3, 5, 9, 17]
    ratios = data["settings"][0]["ratios"]
    assert {"speclens_auto_over_llama_cpp", "speclens_target_only_over_llama_cpp"} <= set(ratios)
    md = out.with_suffix(".md").read_text()
    assert "## llama.cpp on the same GGUF, prompts and threads" in md and "SpecLens auto (default) ÷ llama.cpp" in md
    # --no-llama-cpp leaves it out; a folder target says llama.cpp needs a GGUF.
    code = main(["bench", "--target", str(gguf), "--draft", "prompt-lookup", "--prompts", str(tiny_suite),
                 "--repeats", "1", "--max-new-tokens", "4", "--temperature", "0", "--threads", "1", "--no-auto",
                 "--no-llama-cpp", "--out", str(out)])
    assert code == 0 and "llama_cpp" not in json.loads(out.read_text())


def test_bad_thread_count_is_one_line(capsys):
    assert main(["bench", "--llama-cpp-threads", "0"]) == 2
    assert "--llama-cpp-threads must be >= 1" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason=f"llama-cpp-python {INSTALL_HINT}")
def test_the_real_worker_on_the_embedded_gguf(default_target):
    """The installed llama.cpp in its own process: the same chat ids, OMP_WAIT_POLICY unset there though
    SpecLens's process has it, and its first greedy token equal to SpecLens's on those ids."""
    import psutil
    import torch

    from app.drafting.timing import PROBE
    from app.engine import decode
    from app.engine.result import Result

    assert os.environ.get("OMP_WAIT_POLICY")  # app/__init__ set it here
    ids = default_target.encode_chat(PROBE)
    worker, info = start(llama_cpp_runner.gguf_of(default_target), 1, len(ids) + 64, 3, 4)
    assert worker is not None, info
    try:
        assert info["omp_wait_policy"] is None and info["gguf"].endswith(".gguf")
        params = DecodeParams(gamma=4, temperature=0.0, max_new_tokens=8, seed=0)
        stops = default_target.stop_token_ids
        plain = llama_cpp_runner.generate(worker, TARGET_ONLY, ids.tolist(), params, stops)
        lookup = llama_cpp_runner.generate(worker, PROMPT_LOOKUP, ids.tolist(), params, stops)
        ours = psutil.Process().memory_info().rss / 2**20  # the embedded model, loaded: far above llama.cpp's
        for out in (plain, lookup):
            # its own peak: getrusage's would carry this process's across fork and exec
            assert 0 < len(out["tokens"]) <= 8 and out["seconds"] > 0 and 0 < out["peak_mib"] < ours
            assert all(0 <= t < default_target.vocab_size for t in out["tokens"])
        result = Result()
        with torch.inference_mode():
            for event in decode(default_target.model, ids, None, params, stop_token_ids=stops,
                                vocab_size=default_target.vocab_size):
                result.add(event)
        assert plain["tokens"][0] == result.token_ids[0]
        row = verify_row(worker, ids.tolist(), ns=(1, 2, 5), reps=1)
        # v(1) with every row's logits is the same pass timed on its own: about 1, not exactly
        assert row["v_last"][0] == 1.0 and row["v_all"][0] > 0 and len(row["v_all"]) == 3 and row["step_ms"] > 0
    finally:
        worker.close()
