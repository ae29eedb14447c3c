"""`speclens bench --startup N`: separate launches of the real app, timed to window and to ready."""

from __future__ import annotations

from app.bench.startup import markdown, measure_startup


def test_launches_report_window_then_ready(tiny_pair_dirs):
    target, draft = tiny_pair_dirs
    result = measure_startup(2, str(target), str(draft), log=lambda _msg: None)
    assert len(result["runs"]) == 2
    for run in result["runs"]:
        assert 0 < run["window_s"] <= run["ready_s"] <= run["exit_s"] + 1
    assert "ready to chat" in markdown(result)
