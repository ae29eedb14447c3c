"""`speclens bench --gui-soak N`: the real window answers N messages in one session and the report
holds stalls, memory and reference health (figures themselves are benchmark output, not asserted)."""

from __future__ import annotations

from app.bench.gui_soak import markdown, run_soak


def test_soak_answers_every_message_and_reports(qtbot, tiny_pair_dirs, monkeypatch, tmp_path):
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path))
    target, draft = tiny_pair_dirs
    result = run_soak(str(target), str(draft), messages=3, max_new_tokens=4, log=lambda _msg: None)
    # unseeded sampling: the tiny model may end an answer early with its end token, the 4th token included
    assert all(m["finish"] == "eos" or m["tokens"] == 4 for m in result["per_message"])
    assert all(1 <= m["tokens"] <= 4 and m["finish"] in ("length", "eos") for m in result["per_message"])
    assert result["saved_messages"] == 6  # every question and answer reached the history
    assert result["stall_ms"]["ticks"] > 0 and result["stall_ms"]["max"] >= result["stall_ms"]["p99"] >= 0
    assert result["rss_mib"]["after_last"] > 0
    assert result["none_refs_per_message"] > -50  # a binding dropping None refs loses hundreds a message
    assert "p99" in markdown(result)
