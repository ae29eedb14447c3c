"""The benchmark on the tiny pair: schema, internal consistency, HF/SpecLens agreement. No timing asserts."""

import json

import pytest

from app.bench.prompts import load_suite
from app.bench.runners import MODEL_DRAFT, PROMPT_LOOKUP, TARGET_ONLY, configs_for
from app.bench.suite import run_setting, summarize_setting
from app.cli import main
from app.drafting.tree_probe import verify_tokens
from app.engine import DecodeParams
from app.engine.policy import AUTO_GAMMA_MAX

ROW_KEYS = {
    "config", "engine", "mode", "tokens_per_second", "new_tokens", "speedup", "alpha", "rounds",
    "drafted_rounds", "mean_accepted", "acceptance_histogram", "peak_memory_mib", "c", "verify_cost",
    "predicted_speedup", "efficiency", "per_position_acceptance", "gammas", "ratio_to_best_hf", "gamma", "verify_n",
    "tokens_per_round",
}


def _summary(pair, suite, temperature: float) -> dict:
    params = DecodeParams(gamma=3, temperature=temperature, max_new_tokens=16, seed=3)
    setting = run_setting(pair, load_suite(str(suite)), params, repeats=2)
    return json.loads(json.dumps(summarize_setting(setting)))  # must survive JSON


@pytest.fixture(scope="module")
def greedy_summary(tiny_pair, tiny_suite):
    return _summary(tiny_pair, tiny_suite, 0.0)


@pytest.fixture(scope="module")
def sampling_summary(tiny_pair, tiny_suite):
    return _summary(tiny_pair, tiny_suite, 1.0)


@pytest.fixture(params=["greedy_summary", "sampling_summary"])
def summary(request):
    return request.getfixturevalue(request.param)


def test_every_configuration_is_reported(summary):
    assert [row["config"] for row in summary["configs"]] == [c.name for c in configs_for(True)]
    for row in summary["configs"]:
        assert set(row) == ROW_KEYS
        tps = row["tokens_per_second"]
        assert len(tps["per_repeat"]) == 2
        assert tps["min"] <= tps["median"] <= tps["max"]
        assert row["peak_memory_mib"] > 0
    assert set(summary["ratios"]) == {
        "speclens_over_hf_target_only", "speclens_over_hf_speculative", "speclens_over_hf_prompt_lookup",
        "best_hf", "best_speclens", "best_speclens_over_best_hf",
    }
    hf = {row["config"]: row["tokens_per_second"]["median"] for row in summary["configs"] if row["engine"] == "hf"}
    assert summary["ratios"]["best_hf"] == max(hf, key=hf.get)
    best = next(row for row in summary["configs"] if row["config"] == summary["ratios"]["best_hf"])
    assert best["ratio_to_best_hf"] == pytest.approx(1.0)
    assert "HF assisted (HF defaults)" in hf
    assert set(summary["costs"]) == {"chat", "echo"}


def test_round_statistics_are_consistent(summary):
    rows = {(r["engine"], r["mode"]): r for r in summary["configs"]}
    for mode in (TARGET_ONLY, MODEL_DRAFT, PROMPT_LOOKUP):
        assert rows["hf", mode]["alpha"] is None  # HF does not expose its rounds
    assert rows["speclens", TARGET_ONLY]["acceptance_histogram"] is None
    assert rows["speclens", TARGET_ONLY]["speedup"] == pytest.approx(1.0)
    spec = rows["speclens", MODEL_DRAFT]
    # A model draft always proposes, so every round lands in the histogram.
    assert len(spec["acceptance_histogram"]) == 3 + 1
    assert sum(spec["acceptance_histogram"]) == spec["rounds"] == spec["drafted_rounds"]
    assert spec["mean_accepted"] == pytest.approx(
        sum(i * n for i, n in enumerate(spec["acceptance_histogram"])) / spec["rounds"]
    )
    # Each round emits accepted + 1 tokens except a final one cut by the length limit or EOS.
    assert spec["new_tokens"] <= spec["rounds"] + spec["mean_accepted"] * spec["rounds"] + 1e-9
    assert 0.0 <= spec["alpha"] <= 1.0
    assert spec["efficiency"] == pytest.approx(spec["speedup"] / spec["predicted_speedup"])
    lookup = rows["speclens", PROMPT_LOOKUP]
    assert sum(lookup["acceptance_histogram"]) == lookup["drafted_rounds"] <= lookup["rounds"]


def test_greedy_outputs_are_token_identical_across_engines(greedy_summary):
    assert greedy_summary["setting"] == "greedy"
    outputs = greedy_summary["outputs"]
    reference = outputs["SpecLens target-only"]
    assert all(len(runs[0]) > 0 for runs in reference.values())
    for name, per_prompt in outputs.items():
        assert per_prompt == reference, name


def test_cli_writes_json_and_markdown(tiny_pair_dirs, tiny_suite, tmp_path, capsys):
    target, draft = map(str, tiny_pair_dirs)
    out = tmp_path / "res.json"
    code = main(["bench", "--target", target, "--draft", draft, "--prompts", str(tiny_suite), "--repeats", "1",
                 "--max-new-tokens", "8", "--temperature", "0", "--threads", "1", "--out", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert [s["setting"] for s in data["settings"]] == ["greedy"]
    assert data["meta"]["repeats"] == 1
    md = out.with_suffix(".md").read_text()
    assert "SpecLens speculative / HF assisted" in md
    assert "## Drafter choice (auto)" in md and "SpecLens auto (default) / best HF" in md
    assert data["choice"]["profiles"] and len(data["choice"]["verify_seconds"]) == verify_tokens(8)  # chains and trees
    auto = next(row for row in data["settings"][0]["configs"] if row["config"] == "SpecLens auto (default)")
    outputs = data["settings"][0]["outputs"]
    assert outputs["SpecLens auto (default)"] == outputs["SpecLens target-only"]  # greedy: exact either way
    assert auto["speedup"] > 0
    assert md in capsys.readouterr().out
    # The CPU costs: v(n) for every n up to 17 against a triad measured in the same run; HF in bf16 too.
    cpu = data["cpu"]
    assert cpu["triad_gbps"] > 0 and all(len(r["v"]) == 17 and r["v"][0] == 1.0 for r in cpu["rows"].values())
    assert "## CPU step against memory bandwidth" in md
    assert "HF target-only (bf16)" in outputs and outputs["HF target-only (bf16)"]


def test_sweep_reports_best_gammas_and_plots(tiny_pair_dirs, tiny_suite, tmp_path):
    target, draft = map(str, tiny_pair_dirs)
    out = tmp_path / "sweep.json"
    code = main(["bench", "--target", target, "--draft", draft, "--prompts", str(tiny_suite), "--repeats", "1",
                 "--max-new-tokens", "8", "--temperature", "1", "--threads", "1", "--sweep", "1,2,3",
                 "--out", str(out)])
    assert code == 0
    sweep = json.loads(out.read_text())["sweep"]
    assert [p["gamma"] for p in sweep["points"]] == [1, 2, 3]
    assert sweep["best_gamma_measured"] in (1, 2, 3)
    assert sweep["best_gamma_predicted"] == max(sweep["points"], key=lambda p: p["predicted_speedup"])["gamma"]
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--temperature", "hot"], "--temperature takes comma-separated numbers"),
        (["--sweep", "1,x"], "--sweep takes comma-separated integers"),
        (["--sweep", "0,2"], "gamma must be between 1 and 16"),
        (["--repeats", "0"], "--repeats must be >= 1"),
        (["--prompts", "no-such-suite"], "prompt suite not found"),
    ],
)
def test_bad_input_is_one_line(args, message, capsys, tmp_path):
    assert main(["bench", *args, "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_malformed_suite(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"prompts": [{"id": "x"}]}')
    with pytest.raises(ValueError, match="is not a prompt suite"):
        load_suite(str(bad))


def test_auto_and_hf_defaults_rows(tiny_pair, tiny_suite):
    """The app's default (drafter and γ chosen by measurement, γ live) and HF's own assisted defaults."""
    from app.bench.runners import AUTO, HF_DEFAULTS, Config
    from app.drafting.auto import select

    pair = tiny_pair
    pair.selection = select(pair.target, "prompt-lookup")
    try:
        configs = [Config("speclens", TARGET_ONLY), Config("hf", TARGET_ONLY), Config("hf", HF_DEFAULTS),
                   Config("speclens", AUTO)]
        params = DecodeParams(gamma=3, temperature=0.0, max_new_tokens=16, seed=3)
        summary = summarize_setting(run_setting(pair, load_suite(str(tiny_suite)), params, 1, configs))
    finally:
        pair.selection = None
    rows = {row["config"]: row for row in summary["configs"]}
    auto = rows["SpecLens auto (default)"]
    assert auto["gammas"] and all(1 <= int(g) <= AUTO_GAMMA_MAX for g in auto["gammas"])
    assert sum(auto["gammas"].values()) == auto["rounds"]
    assert len(auto["per_position_acceptance"]) == max(int(g) for g in auto["gammas"])
    assert summary["ratios"]["speclens_auto_over_best_hf"] > 0
    outputs = summary["outputs"]
    assert outputs["SpecLens auto (default)"] == outputs["SpecLens target-only"] == outputs["HF assisted (HF defaults)"]


def test_only_runs_the_named_configurations(tiny_pair_dirs, tiny_suite, tmp_path, capsys):
    target, draft = map(str, tiny_pair_dirs)
    out = tmp_path / "only.json"
    argv = ["bench", "--target", target, "--draft", draft, "--prompts", str(tiny_suite), "--repeats", "1",
            "--max-new-tokens", "4", "--temperature", "0", "--threads", "1", "--no-auto", "--out", str(out)]
    assert main([*argv, "--only", "HF assisted"]) == 0
    rows = [r["config"] for r in json.loads(out.read_text())["settings"][0]["configs"]]
    assert rows == ["SpecLens target-only", "HF target-only", "HF assisted"]
    assert main([*argv, "--only", "HF turbo"]) == 2
    assert "no configuration named 'HF turbo'" in capsys.readouterr().err
def test_static_engine_gives_the_same_greedy_tokens(tiny_pair_dirs, tiny_suite, tmp_path):
    """--static: SpecLens runs (and its step costs) go through static caches; greedy tokens match HF's."""
    target, draft = map(str, tiny_pair_dirs)
    out = tmp_path / "static.json"
    code = main(["bench", "--target", target, "--draft", draft, "--prompts", str(tiny_suite), "--repeats", "1",
                 "--max-new-tokens", "8", "--temperature", "0", "--threads", "1", "--no-auto", "--static", "--out", str(out)])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["meta"]["engine"] == "static" and data["meta"]["model_mib"]["target"] > 0
    outputs = data["settings"][0]["outputs"]
    reference = outputs["HF target-only"]
    for name, per_prompt in outputs.items():
        assert per_prompt == reference, name
    assert all(cost["verify_cost"] > 0 for cost in data["settings"][0]["costs"].values())
    assert "SpecLens engine: static" in out.with_suffix(".md").read_text()


@pytest.mark.parametrize("flag, module, function, draft_arg", [("--gui-soak", "app.bench.gui_soak", "run_soak", 1),
                                                                ("--startup", "app.bench.startup", "measure_startup", 2)])
def test_soak_and_startup_use_the_apps_default_draft(flag, module, function, draft_arg, monkeypatch, tmp_path):
    """A user's window drafts with auto: timing the bf16 self-draft instead measured a slower app than ships."""
    import importlib

    seen = []

    def fake(*args, **kwargs):
        seen.append(args[draft_arg])
        raise SystemExit(0)

    monkeypatch.setattr(importlib.import_module(module), function, fake)
    with pytest.raises(SystemExit):
        main(["bench", flag, "2", "--out", str(tmp_path / "x.json")])
    with pytest.raises(SystemExit):
        main(["bench", flag, "2", "--draft", "self", "--out", str(tmp_path / "x.json")])
    assert seen == ["auto", "self"]


def test_out_may_name_a_folder(tmp_path):
    """`--out /tmp/run1` where the folder exists (or ends in a separator) writes bench-results.json in it
    instead of stopping with IsADirectoryError after the whole run."""
    from app.cli.bench_cmd import result_path

    assert result_path(str(tmp_path)) == tmp_path / "bench-results.json"
    assert result_path(str(tmp_path / "new") + "/") == tmp_path / "new" / "bench-results.json"
    assert result_path(str(tmp_path / "res.json")) == tmp_path / "res.json"


def test_every_row_runs_at_the_targets_thread_count(tiny_pair_dirs, monkeypatch):
    """HF's rows need a float32 copy of a target on another path, and that copy's load sets the count timed
    fastest for it: the report's rows then ran at the copy's count, not at the target's (1 against 2 seen)."""
    from dataclasses import replace

    import torch

    import app.models
    from app.cli import build_parser
    from app.cli.bench_cmd import _load_pair
    from app.machine.threads import ThreadChoice
    from app.machine.torch_path import LinearPath, PathChoice

    real = app.models.load_model

    def load(spec, **kwargs):
        loaded = real(spec, **kwargs)
        if kwargs.get("dtype") == torch.float32:
            torch.set_num_threads(1)  # the copy's own timing chose 1
            return loaded
        planted = replace(loaded.profile, kernels=PathChoice(LinearPath("bfloat16"), {}, True, "planted"),
                          threads=ThreadChoice(2, {}, True, "2 threads: planted"))
        return replace(loaded, profile=planted)  # a target on a bf16 path, 2 threads chosen

    monkeypatch.setattr(app.models, "load_model", load)
    threads = torch.get_num_threads()
    try:
        args = build_parser().parse_args(["bench", "--target", str(tiny_pair_dirs[0]), "--draft", "none"])
        pair, _ = _load_pair(args)
        assert pair.hf_model is not None and pair.target.threads.threads == 2
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)


def test_speclens_rows_take_drafters_from_the_registry_and_check_the_machine(tiny_pair, tmp_path, monkeypatch):
    """Prompt lookup as every front end builds it (the registry's: it never proposes the target's template
    tokens; HF's row gets the same n-gram sizes), and every SpecLens row's rounds fed to one machine check for
    the pair, as a chat's are, whose verdict disputes a profile they disagree with."""
    from app.bench.runners import LOOKUP_MAX_NGRAM, run_speclens, speclens_answer
    from app.drafting.drafts import template_tokens
    from app.engine.policy import VerifyCosts
    from app.machine.live_check import LiveCheck
    from app.machine.profile import MachineProfile, VerifyTiming

    pair, target = tiny_pair, tiny_pair.target
    params = DecodeParams(gamma=3, temperature=0.0, max_new_tokens=12, seed=3)
    lookup = speclens_answer(pair, PROMPT_LOOKUP, params).drafter
    assert lookup.never and lookup.never == template_tokens(target) and lookup.max_ngram == LOOKUP_MAX_NGRAM
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path))  # the dispute is written here
    # a profile that says a pass takes 0.1 µs: every live round disagrees with it
    wrong = MachineProfile("bench-check", verify=VerifyTiming(VerifyCosts((1e-7,) * 12), 1e-7, 10_000))
    monkeypatch.setattr(target, "profile", wrong)
    monkeypatch.setattr(pair, "check", None)
    monkeypatch.setattr(pair, "disputed", "")
    first = speclens_answer(pair, TARGET_ONLY, params).check
    assert first is not None and first.profile is wrong
    assert speclens_answer(pair, MODEL_DRAFT, params).check is first  # one check for the pair, over every row
    pair.check = LiveCheck(wrong, rounds=2)
    ids = target.encode_chat([{"role": "user", "content": "abcabc"}])
    run_speclens(pair, TARGET_ONLY, ids, params)
    assert "slower than this machine's profile" in pair.disputed and target.profile.disputed == pair.disputed
