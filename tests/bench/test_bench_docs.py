"""`speclens bench --docs`: this machine class's table on docs/benchmark.md replaced, the run written as a dated
file, on a canned result (no benchmark runs here)."""

import datetime as dt
from pathlib import Path

import pytest

from app.bench import docs_table
from app.bench.docs_table import DocsError, MachineClass, machine_class
from app.cli import main

ROOT = Path(__file__).resolve().parents[2]
AMD = MachineClass("amd-no-amx", "AMD, no AMX", "AMD EPYC 9R14 96-Core Processor")
DAY = dt.date(2026, 12, 6)
COMMAND = "speclens bench --only 'SpecLens target-only,SpecLens auto (default)' --temperature 0"


def _row(config, mode, tps, speedup, hf, **extra):
    return {"config": config, "mode": mode, "tokens_per_second": {"median": tps, "min": tps - 1, "max": tps + 1},
            "speedup": speedup, "ratio_to_best_hf": hf, "alpha": None, "rounds": None, "new_tokens": None,
            "gammas": None, "c": None, "peak_memory_mib": 2058.0, "mean_accepted": None,
            "acceptance_histogram": None, "per_position_acceptance": None, "verify_cost": None,
            "predicted_speedup": None, "efficiency": None, **extra}


def canned_result() -> dict:
    return {
        "meta": {"target": "SmolLM2-135M-Instruct (embedded)", "draft": "none", "gamma": 4, "max_new_tokens": 48,
                 "repeats": 2, "prompts": "bench", "n_prompts": 4, "device": "cpu", "threads": 2,
                 "target_kernels": "Q4_1 + Q8_0 · native", "torch": "2.13.0+cpu", "transformers": "5.24.0",
                 "load_average": {"before": [1.1, 1.0, 0.9], "after": [1.4, 1.1, 1.0]}},
        "cpu": {"triad_gbps": 33.9, "rows": {"Q4_1 + Q8_0 · native": {
            "step_ms": 5.8, "step_mib": 92, "gbps": 16.6, "floor_ms": 2.8, "over_floor": 2.04,
            "v": [1.00, 1.12, 1.40, 1.59, 1.88, 2.42, 2.81, 2.99, 3.26, 3.63, 4.17, 4.28, 4.35, 4.82, 4.91, 5.09, 5.58]}}},
        "settings": [{"setting": "greedy", "params": {"gamma": 4},
                      "configs": [_row("SpecLens target-only", "target-only", 87.4, 1.0, 7.80, rounds=384, new_tokens=384),
                                  _row("HF target-only", "target-only", 11.2, 1.0, 1.0),
                                  _row("SpecLens auto (default)", "auto", 92.2, 1.05, 8.20, alpha=0.481, rounds=310,
                                       new_tokens=384, gammas={"1": 154}, c=0.03)],
                      "ratios": {"speclens_over_hf_target_only": 7.80}}],
    }


PAGE = """# Benchmark

## AMD, no AMX

<!-- bench:begin amd-no-amx -->
old AMD table
<!-- bench:end amd-no-amx -->

## Intel, AMX

<!-- bench:begin intel-amx -->
the Intel table, kept
<!-- bench:end intel-amx -->
"""


def test_update_replaces_this_class_keeps_the_other_and_writes_a_dated_run(tmp_path):
    doc = tmp_path / "docs" / "benchmark.md"
    doc.parent.mkdir()
    doc.write_text(PAGE)
    path = docs_table.update(canned_result(), doc, COMMAND, machine=AMD, when=DAY)
    text = doc.read_text()
    assert "old AMD table" not in text
    assert "the Intel table, kept" in text
    assert text.startswith("# Benchmark\n\n## AMD, no AMX\n\n<!-- bench:begin amd-no-amx -->\n**2026-12-06**")
    block = text.split("<!-- bench:begin amd-no-amx -->")[1].split("<!-- bench:end amd-no-amx -->")[0]
    assert "AMD EPYC 9R14" in block and f"`{COMMAND}`" in block
    assert "| greedy | SpecLens auto (default) | 92.2 | 91.2–93.2 | 1.05× | 8.20× | 0.481 | 1.24 | auto (1) | 0.03 | 2058 |" in block
    assert "| greedy | SpecLens target-only | 87.4 | 86.4–88.4 | 1.00× | 7.80× | – | 1.00 | – | – | 2058 |" in block
    assert "One target step 5.8 ms on Q4_1 + Q8_0 · native (2.04× bytes ÷ triad" in block
    assert path == tmp_path / "docs" / "bench-runs" / "2026-12-06-amd-no-amx-bench.md"
    assert f"[{path.name}](bench-runs/{path.name})" in block
    run = path.read_text()
    assert run.startswith("# `speclens bench`, 2026-12-06, AMD, no AMX\n")
    assert COMMAND in run and "## SpecLens benchmark" in run and "| SpecLens auto (default) | 92.2 |" in run
    # the same day again: a second file, the block points at it
    second = docs_table.update(canned_result(), doc, COMMAND, machine=AMD, when=DAY)
    assert second.name == "2026-12-06-amd-no-amx-bench-2.md" and path.exists()
    assert doc.read_text().count("<!-- bench:begin amd-no-amx -->") == 1
    assert second.name in doc.read_text() and "the Intel table, kept" in doc.read_text()


@pytest.mark.parametrize("page", [
    PAGE.replace("<!-- bench:begin amd-no-amx -->\n", ""),  # a twin without its begin marker
    PAGE.replace("<!-- bench:begin amd-no-amx -->", "<!-- bench:begin amd-no-amx -->\n<!-- bench:begin amd-no-amx -->"),
    PAGE.replace("<!-- bench:begin amd-no-amx -->\nold AMD table\n<!-- bench:end amd-no-amx -->",
                 "<!-- bench:end amd-no-amx -->\nold AMD table\n<!-- bench:begin amd-no-amx -->"),
    "# Benchmark\n\nno markers at all\n",
])
def test_a_page_without_this_class_s_markers_is_refused_and_left_alone(tmp_path, page):
    doc = tmp_path / "benchmark.md"
    doc.write_text(page)
    with pytest.raises(DocsError, match=r"<!-- bench:begin amd-no-amx -->.*for this machine's class \(amd-no-amx\)"):
        docs_table.update(canned_result(), doc, COMMAND, machine=AMD, when=DAY)
    assert doc.read_text() == page
    assert not (tmp_path / "bench-runs").exists()


def test_the_cli_refuses_a_page_without_markers_before_loading_anything(tmp_path, capsys, monkeypatch):
    doc = tmp_path / "benchmark.md"
    doc.write_text("# Benchmark\n")
    monkeypatch.setattr("app.cli.bench_cmd._load_pair", lambda *a, **k: pytest.fail("loaded a model"))
    assert main(["bench", "--docs", str(doc), "--out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "speclens bench: error: --docs:" in err and "Add the two lines" in err
    assert main(["bench", "--trees", "--docs", str(doc), "--out", str(tmp_path / "x.json")]) == 2
    assert "does not apply to --trees" in capsys.readouterr().err


def test_the_command_line_names_what_was_asked(tmp_path):
    from app.cli import build_parser
    from app.cli.bench_cmd import command_line

    args = build_parser().parse_args(["bench", "--only", "SpecLens target-only,SpecLens auto (default)",
                                      "--temperature", "0", "--repeats", "2", "--docs", "--out", "x.json"])
    assert args.docs == "docs/benchmark.md"
    assert command_line(args) == ("speclens bench --only 'SpecLens target-only,SpecLens auto (default)' "
                                  "--temperature 0 --repeats 2")


def test_a_pair_run_has_a_table_of_its_own_beside_the_machine_s():
    from app.cli import build_parser
    from app.cli.bench_cmd import docs_machine

    plain = build_parser().parse_args(["bench", "--docs"])
    pair = build_parser().parse_args(["bench", "--pair", "--docs"])
    assert docs_machine(plain).slug == machine_class().slug
    assert docs_machine(pair).slug == f"{machine_class().slug}-qwen-coder"


@pytest.mark.parametrize(("cpuinfo", "slug"), [
    ("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8581C\nflags\t\t: fpu avx512f amx_bf16 amx_tile amx_int8\n",
     "intel-amx"),
    ("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu avx512f avx512_vnni\n", "intel-no-amx"),
    ("vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14 96-Core Processor\nflags\t\t: fpu avx512f avx512_bf16\n",
     "amd-no-amx"),
    ("", "other-no-amx"),
])
def test_machine_class_is_vendor_and_amx(cpuinfo, slug):
    assert machine_class(cpuinfo).slug == slug


def test_the_benchmark_page_holds_a_block_per_documented_class():
    text = (ROOT / "docs" / "benchmark.md").read_text()
    for slug in ("amd-no-amx", "intel-amx", "intel-no-amx", "amd-no-amx-qwen-coder"):
        docs_table.check_page(ROOT / "docs" / "benchmark.md", slug)
        block = text.split(f"<!-- bench:begin {slug} -->")[1].split(f"<!-- bench:end {slug} -->")[0]
        link = block.split("](bench-runs/")[1].split(")")[0]
        assert (ROOT / "docs" / "bench-runs" / link).is_file()


def test_a_tiny_comparison_with_docs_fills_this_machine_s_table(tiny_pair_dirs, tiny_suite, tmp_path):
    target, draft = map(str, tiny_pair_dirs)
    slug = machine_class().slug
    doc = tmp_path / "benchmark.md"
    doc.write_text(f"# B\n\n<!-- bench:begin {slug} -->\nold\n<!-- bench:end {slug} -->\n\n"
                   "<!-- bench:begin zz-other -->\nkept\n<!-- bench:end zz-other -->\n")
    assert main(["bench", "--target", target, "--draft", draft, "--prompts", str(tiny_suite), "--repeats", "1",
                 "--max-new-tokens", "4", "--temperature", "0", "--threads", "1", "--no-auto", "--no-llama-cpp",
                 "--only", "SpecLens target-only", "--docs", str(doc), "--out", str(tmp_path / "res.json")]) == 0
    text = doc.read_text()
    assert "old" not in text and "kept" in text and "| greedy | SpecLens target-only |" in text
    assert "`speclens bench --target" in text and "--only 'SpecLens target-only'" in text
    [run] = (tmp_path / "bench-runs").glob(f"*-{slug}-bench.md")
    assert run.name in text and "## SpecLens benchmark" in run.read_text()


def test_llama_cpp_s_draft_row_shows_its_cap_and_what_it_drafted_not_the_bench_s_gamma():
    result = canned_result()
    result["settings"][0]["configs"].append(
        _row("llama.cpp draft model (llama-speculative-simple)", "draft model", 24.8, 0.65, None, alpha=0.953,
             gamma=16, mean_drafted=3.303))
    rows = {line.split(" | ")[1]: line for line in docs_table.summary_table(result)[2:]}
    assert "| ≤16, 3.3 drafted |" in rows["llama.cpp draft model (llama-speculative-simple)"]
    assert "| auto (1) |" in rows["SpecLens auto (default)"]
