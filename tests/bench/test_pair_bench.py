"""`speclens bench --pair`: its options and rows (no model loaded), llama.cpp's binaries' output parsers on
outputs captured from the real binaries (tests/bench/fixtures/llama_cpp/, the build of
packaging/build_llama_cpp.sh), and the report's per-pair columns on canned results."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.bench import llama_cpp_cli
from app.bench.llama_cpp_cli import LlamaCppCliError, parse_bench, parse_speculative
from app.bench.report import llama_bin_lines, markdown, pair_table, setting_table
from app.bench.runners import (
    AUTO,
    LLAMA_CPP_BIN,
    MODEL_DRAFT,
    TARGET_ONLY,
    Config,
    Run,
    pair_bench_configs,
)
from app.bench.suite import Setting, summarize_setting
from app.cli import UsageError, bench_cmd
from app.engine import DecodeParams, RoundEvent

FIXTURES = Path(__file__).with_name("fixtures") / "llama_cpp"
TARGET, DRAFT = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="speclens")
    bench_cmd.add_parser(parser.add_subparsers())
    return parser.parse_args(["bench", *argv])


def _fetch():
    return Path("/cache/real-pair") / TARGET, Path("/cache/real-pair") / DRAFT


def test_pair_option_takes_its_name_or_none():
    assert _args("--pair").pair == "qwen-coder"
    assert _args("--pair", "qwen-coder").pair == "qwen-coder"
    assert _args().pair is None
    with pytest.raises(SystemExit):
        _args("--pair", "llama-70b")


def test_pair_defaults_fill_what_was_left_at_its_default():
    args = _args("--pair")
    bench_cmd.pair_defaults(args, fetch=_fetch)
    assert (args.target, args.draft) == (str(_fetch()[0]), str(_fetch()[1]))
    assert (args.prompts, args.max_new_tokens, args.temperature) == ("code", 128, "0,0.7")
    assert args.gamma == 4 and args.repeats == 3


def test_pair_defaults_keep_what_was_given():
    args = _args("--pair", "--prompts", "mine.json", "--max-new-tokens", "32", "--draft", "prompt-lookup",
                 "--temperature", "0")
    bench_cmd.pair_defaults(args, fetch=_fetch)
    assert (args.prompts, args.max_new_tokens, args.draft, args.temperature) == ("mine.json", 32, "prompt-lookup", "0")
    assert args.target == str(_fetch()[0])


@pytest.mark.parametrize("flag", [["--sweep", "1,2"], ["--trees"], ["--quality"], ["--startup", "2"]])
def test_pair_refuses_the_other_modes_before_fetching(flag, monkeypatch):
    monkeypatch.setattr(bench_cmd, "pair_defaults", lambda *a, **k: pytest.fail("fetched"))
    with pytest.raises(UsageError, match="--pair"):
        bench_cmd.run(_args("--pair", *flag))


def test_pair_rows_in_their_order():
    names = [c.name for c in pair_bench_configs(True, True, True)]
    assert names == ["SpecLens target-only", "SpecLens speculative", "SpecLens auto (default)",
                     "llama.cpp target-only (llama-bench)", "llama.cpp draft model (llama-speculative-simple)"]
    assert [c.name for c in pair_bench_configs(True, False, False)] == ["SpecLens target-only",
                                                                        "SpecLens speculative"]


def test_pick_configs_takes_the_pair_rows(monkeypatch):
    class FakePair:
        drafter, selection, llama_bin = object(), object(), object()

    configs = bench_cmd.pick_configs(FakePair(), None, pair_rows=True)
    assert [c.engine for c in configs] == ["speclens"] * 3 + [LLAMA_CPP_BIN] * 2
    only = bench_cmd.pick_configs(FakePair(), "SpecLens auto (default)", pair_rows=True)
    assert [c.mode for c in only] == [TARGET_ONLY, AUTO, TARGET_ONLY]  # target-only rows always kept


def test_build_script_flags_and_cache_folder():
    script = llama_cpp_cli.SCRIPT.read_text(encoding="utf-8")
    for flag in ("-DGGML_NATIVE=OFF", "-DGGML_AVX512=ON", "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF",
                 "-DGGML_AMX_BF16=OFF", "-DLLAMA_CURL=OFF", "nice -n 19", "llama-speculative-simple", "llama-bench"):
        assert flag in script
    assert llama_cpp_cli.root("9.9.9").parts[-3:] == ("speclens", "llama.cpp", "9.9.9")


def test_binaries_found_only_with_both_and_the_build_info(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECLENS_LLAMA_CPP_DIR", str(tmp_path))
    folder = tmp_path / "1.0" / "bin"
    folder.mkdir(parents=True)
    (folder / "llama-bench").write_text("")
    assert llama_cpp_cli.Binaries.at(tmp_path / "1.0") is None
    (folder / "llama-speculative-simple").write_text("")
    (tmp_path / "1.0" / "build-info.txt").write_text("llama-cpp-python 1.0\n")
    found = llama_cpp_cli.ensure_built("1.0")  # present: nothing is built
    assert found.info == "llama-cpp-python 1.0"


# ---- parsers on the real binaries' captured outputs --------------------------------------------------------

def test_parse_llama_bench_json():
    tests = parse_bench((FIXTURES / "llama-bench.txt").read_text(encoding="utf-8"))
    assert {(t["model"], t["n_prompt"], t["n_gen"]) for t in tests} >= {(TARGET, 0, 16), (DRAFT, 0, 16),
                                                                          (TARGET, 17, 0)}
    assert all(t["tokens_per_second"] > 0 and t["seconds"] > 0 for t in tests)
    costs = llama_cpp_cli.costs_from(tests, TARGET, DRAFT, 17)
    assert 0 < costs["c"] < 1  # the 0.5B steps faster than the 1.5B
    assert costs["verify_n"] == 17 and costs["verify_cost"] > 1


def test_parse_llama_speculative_simple():
    out = parse_speculative((FIXTURES / "llama-speculative-simple.txt").read_text(encoding="utf-8"))
    assert out["draft_max"] == llama_cpp_cli.DRAFT_MAX
    assert out["tokens"] >= 1 and out["seconds"] > 0 and out["tokens_per_second"] > 0
    assert 0 <= out["accepted"] <= out["drafted"]
    assert out["rounds"] == out["tokens"] - out["accepted"]
    assert out["tokens_per_round"] == pytest.approx(out["tokens"] / out["rounds"])


def test_llama_bench_json_with_log_lines_after_it():
    text = (FIXTURES / "llama-bench.txt").read_text(encoding="utf-8")
    assert parse_bench(text + "\nllama_perf [ 12 ] done\n") == parse_bench(text)


def test_parsers_refuse_output_without_their_numbers():
    with pytest.raises(LlamaCppCliError, match="decoded"):
        parse_speculative("error: failed to load model\n")
    with pytest.raises(LlamaCppCliError, match="no JSON"):
        parse_bench("main: error: failed to load model\n")


def test_speculative_command_has_the_maintainers_draft_flags(tmp_path):
    cmd = llama_cpp_cli.speculative_command(Path("spec"), Path("t.gguf"), Path("d.gguf"), tmp_path / "p.txt",
                                            2, 128, 0.0, 0, 4096)
    joined = " ".join(cmd)
    assert "-md d.gguf" in joined and "-n 128" in joined and "-t 2" in joined and "--temp 0" in joined
    assert "--spec-draft-n-max 16" in joined and "--spec-draft-p-min 0.75" in joined
    assert "--spec-type draft-simple" in joined


# ---- the report's columns on canned results ----------------------------------------------------------------

def _round(gamma: int, accepted: int) -> RoundEvent:
    return RoundEvent(round=0, gamma=gamma, drafted=gamma, accepted=accepted, emitted=accepted + 1,
                      bonus=accepted == gamma, overlap=(0.8,) * gamma, draft_time=0.002 * gamma, verify_time=0.03)


def _canned() -> dict:
    from app.bench.costs import StepCosts

    params = DecodeParams(gamma=4, temperature=0.0, max_new_tokens=10)
    configs = pair_bench_configs(True, True, True)
    target, spec, auto, l_target, l_spec = (c.name for c in configs)
    spec_counts = {"tokens": 10, "seconds": 0.1, "tokens_per_second": 100.0, "draft_max": 16, "drafted": 12,
                   "accepted": 6, "rounds": 4, "tokens_per_round": 2.5, "acceptance": 0.5}
    runs = {
        (target, "p"): [Run(list(range(10)), 0.5, None, None, target_step=0.02)],
        (spec, "p"): [Run(list(range(10)), 0.25, None, [_round(4, 4), _round(4, 1), _round(4, 2)])],
        (auto, "p"): [Run(list(range(10)), 0.2, None, [_round(3, 3), _round(5, 2), _round(5, 3)])],
        (l_target, "p"): [Run([-1] * 10, 0.2, None, None, counts={"tokens": 10})],
        (l_spec, "p"): [Run([-1] * 10, 0.1, None, None, counts=spec_counts)],
    }
    setting = Setting(params, configs, {"p": StepCosts(0.02, 0.03, 0.004)}, runs)
    llama_costs = {"c": 0.4, "verify_n": 17, "verify_cost": 1.9, "target_step_ms": 10.0, "draft_step_ms": 4.0}
    return summarize_setting(setting, llama_costs)


def test_summary_has_gamma_tokens_a_round_and_v_n_per_configuration():
    rows = {row["config"]: row for row in _canned()["configs"]}
    spec = rows["SpecLens speculative"]
    assert (spec["gamma"], spec["verify_n"]) == (4, 5)
    assert spec["tokens_per_round"] == pytest.approx(10 / 3)
    assert spec["c"] == pytest.approx(0.2) and spec["verify_cost"] == pytest.approx(1.5)
    auto = rows["SpecLens auto (default)"]
    assert auto["gamma"] == 5 and auto["gammas"] == {"3": 1, "5": 2}
    assert auto["verify_cost"] == pytest.approx(0.03 / 0.02) and auto["verify_n"] == 6
    llama = rows["llama.cpp draft model (llama-speculative-simple)"]
    assert llama["alpha"] == pytest.approx(0.5) and llama["tokens_per_round"] == pytest.approx(2.5)
    assert (llama["c"], llama["verify_cost"], llama["verify_n"], llama["gamma"]) == (0.4, 1.9, 17, 16)
    assert llama["speedup"] == pytest.approx(2.0)  # ÷ llama-bench target-only, within the run
    assert rows["SpecLens speculative"]["speedup"] == pytest.approx(2.0)
    assert rows["SpecLens target-only"]["gamma"] is None


def test_report_pair_table_and_llama_block():
    summary = _canned()
    table = "\n".join(pair_table(summary))
    assert "| configuration | c | v(n) | α | tokens / round | γ | tok/s | × target-only |" in table
    assert "| SpecLens speculative | 0.200 | 1.50 (n=5) | 0.800 | 3.33 | 4 | 40.0 | 2.00× |" in table
    assert "5 (3: 1, 5: 2)" in table
    assert "| 0.400 | 1.90 (n=17) | 0.500 | 2.50 | ≤16 (p-min), 3.0 drafted a round | 100.0 | 2.00× |" in table
    assert "| γ | α | tokens / round |" in setting_table(summary)
    info = {"build": "llama-cpp-python 0.3.36 (vendor/llama.cpp)", "threads": 2,
            "speculative_flags": {"draft_max": 16, "draft_min": 0, "draft_p_min": 0.75},
            "costs": {"c": 0.4, "verify_n": 17, "verify_cost": 1.9, "target_step_ms": 10.0, "draft_step_ms": 4.0}}
    block = "\n".join(llama_bin_lines(info))
    assert "--spec-draft-n-max 16" in block and "c = 0.400" in block and "v(17) = 1.90" in block
    meta = {"target": "t", "draft": "d", "gamma": 4, "max_new_tokens": 10, "repeats": 1, "prompts": "code",
            "n_prompts": 1, "device": "cpu", "threads": 2, "torch": "x", "transformers": "y", "pair": "qwen-coder"}
    text = markdown({"meta": meta, "settings": [summary], "llama_cpp_bin": info})
    assert "× target-only" in text and "llama.cpp's own binaries on the same pair" in text
    assert "SpecLens speculative ÷ llama.cpp draft model" in text
    assert "llama.cpp binaries: not built" in llama_bin_lines({"unavailable": "not built"})[0]


def test_row_kinds():
    assert Config(LLAMA_CPP_BIN, MODEL_DRAFT).name.startswith("llama.cpp draft model")


def test_cli_pair_end_to_end_on_the_tiny_pair(tiny_pair_dirs, tiny_suite, tmp_path, monkeypatch):
    """The whole --pair comparison on the tiny pair standing in for the fetched files: the three SpecLens rows,
    no HF rows, the pair's table; llama.cpp's binaries need GGUF files and say so."""
    import json

    from app.cli import fetch_pair_cmd, main

    monkeypatch.setattr(fetch_pair_cmd, "fetch_with_progress", lambda dest=None: tiny_pair_dirs)
    out = tmp_path / "pair.json"
    code = main(["bench", "--pair", "--prompts", str(tiny_suite), "--repeats", "1", "--max-new-tokens", "8",
                 "--temperature", "0", "--threads", "1", "--out", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["meta"]["pair"] == "qwen-coder" and data["meta"]["max_new_tokens"] == 8
    rows = {row["config"]: row for row in data["settings"][0]["configs"]}
    assert list(rows) == ["SpecLens target-only", "SpecLens speculative", "SpecLens auto (default)"]
    assert rows["SpecLens speculative"]["gamma"] == 4 and rows["SpecLens speculative"]["tokens_per_round"] > 0
    assert "unavailable" in data["llama_cpp_bin"]
    md = out.with_suffix(".md").read_text()
    assert "| configuration | c | v(n) | α | tokens / round | γ | tok/s | × target-only |" in md


def test_llama_bin_runs_call_the_binaries(monkeypatch):
    import torch

    from app.bench.runners import LlamaBin, run_llama_bin

    calls = []
    spec = {"tokens": 12, "seconds": 0.2, "drafted": 9, "accepted": 7, "rounds": 5, "draft_max": 16}
    monkeypatch.setattr(llama_cpp_cli, "target_only", lambda b, t, th, n: calls.append(("bench", n)) or
                        {"tokens": n, "seconds": 0.5, "tokens_per_second": n / 0.5, "build": "x"})
    monkeypatch.setattr(llama_cpp_cli, "speculative", lambda b, t, d, text, th, n, temp, seed:
                        calls.append(("spec", text, n, temp)) or spec)

    class Tok:
        def decode(self, ids, skip_special_tokens):
            assert skip_special_tokens is False
            return "".join(map(chr, ids))

    class Target:
        tokenizer = Tok()

    class FakePair:
        target = Target()
        llama_bin = LlamaBin(object(), Path("t.gguf"), Path("d.gguf"), 2)

    params = DecodeParams(gamma=4, temperature=0.7, max_new_tokens=16)
    run = run_llama_bin(FakePair(), TARGET_ONLY, torch.tensor([104, 105]), params)
    assert len(run.tokens) == 16 and run.seconds == 0.5
    run = run_llama_bin(FakePair(), MODEL_DRAFT, torch.tensor([104, 105]), params)
    assert len(run.tokens) == 12 and run.counts == spec
    assert calls == [("bench", 16), ("spec", "hi", 16, 0.7)]
