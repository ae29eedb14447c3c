"""`speclens bench --gpu-mechanics --tiny`: the GPU check's whole pipeline on tiny models, on a CPU."""

from __future__ import annotations

import json

from app.cli import main


def test_tiny_mechanics_run_end_to_end(tmp_path, capsys):
    out = tmp_path / "mech.json"
    assert main(["bench", "--gpu-mechanics", "--tiny", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [r["gamma"] for r in result["rows"]] == [1, 2]
    for row in result["rows"]:
        for name in ("hf_assisted", "dynamic", "static", "compiled"):
            assert row[name]["tps"] > 0, name
        assert row["compiled"]["alpha"] is not None  # the loop drafted and verified
        assert row["costs_compiled"]["c"] > 0 and row["costs_compiled"]["verify_cost"] > 0
        assert row["syncs_per_round"] is None  # counted through CUDA's sync debug mode only
    assert result["compile_seconds"] > 0
    assert result["memory_mib"]["target_static_kv"] > 0
    text = out.with_suffix(".md").read_text()
    assert "| 2 |" in text and "CPU run of the mechanics only" in text
    assert text in capsys.readouterr().out


def test_tiny_needs_gpu_mechanics(capsys):
    assert main(["bench", "--tiny"]) == 2
    assert "--tiny only applies to --gpu-mechanics" in capsys.readouterr().err
