"""`speclens bench --startup N`: separate launches of the real app, timed to each stage and to ready."""

from __future__ import annotations

from app.bench.startup import markdown, measure_startup, stage_marks
from app.startup_trace import STAGE_NAMES, STAGES


def test_launches_report_window_then_ready(tiny_pair_dirs):
    target, draft = tiny_pair_dirs
    result = measure_startup(2, str(target), str(draft), log=lambda _msg: None)
    assert len(result["runs"]) == 2
    for run in result["runs"]:
        assert 0 < run["window_s"] <= run["ready_s"] <= run["exit_s"] + 1
        assert set(run["stages"]) == set(STAGES), run["stages"]  # every stage marked, in a real launch
        assert run["cpu_s"] > 0
        assert run["stages"]["qt"] <= run["stages"]["window"]
        assert run["stages"]["torch"] <= run["stages"]["transformers"] <= run["stages"]["classes"] \
            <= run["stages"]["tokenizer"] <= run["stages"]["weights"] <= run["stages"]["drafter"] <= run["ready_s"]
    text = markdown(result)
    assert "ready to chat" in text
    assert all(STAGE_NAMES[s] in text for s in STAGES)


def test_stage_marks_ignore_other_output():
    out = "startup: torch 1.5\nsome log line\nstartup: failed could not load\nstartup: ready 3.25\nstartup: cpu 2.5\n"
    assert stage_marks(out) == {"torch": 1.5, "ready": 3.25, "cpu": 2.5}
