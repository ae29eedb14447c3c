"""The first run's phases, each with its own determinate bar: a GGUF's dequantisation and the drafters' timing
are named and go from 0 to 1 on their own, instead of one bar for the whole load."""

from __future__ import annotations

import sys
from pathlib import Path

from app.gui.load_phases import phase_progress
from app.gui.model_loader import LoadRequest, ModelLoader
from app.models import LoadProgress

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "models"))
from tiny_gguf import write_tiny_gguf  # noqa: E402


def test_each_report_maps_to_its_phase_and_its_share_of_it():
    text, fraction = phase_progress("Target", LoadProgress("convert", 0.45, "dequantising tensor 8/16"))
    assert text.startswith("Dequantising the GGUF (first run only)") and "8/16" in text
    assert abs(fraction - 0.5) < 1e-9  # halfway through the dequantiser's span of the load
    text, fraction = phase_progress("Draft", LoadProgress("measure", 0.25, "timing drafter self"))
    assert text.startswith("Timing the drafters") and fraction == 0.25
    assert phase_progress("Target", LoadProgress("weights", 0.4, "loading", 10 * 2**20, 20 * 2**20))[0].endswith(
        "10/20 MiB")
    assert phase_progress("Target", LoadProgress("convert", 0.9))[1] == 1.0  # clamped


def test_a_first_run_shows_dequantising_then_timing_each_from_0_to_1(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))  # nothing converted or timed yet
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))
    gguf = write_tiny_gguf(tmp_path / "tiny.gguf")
    reports: list[tuple[str, float]] = []
    loader = ModelLoader()
    loader.progress.connect(lambda text, fraction: reports.append((text, fraction)))
    loaded = []
    loader.loaded.connect(loaded.append)
    loader.load(LoadRequest(str(gguf), "auto"))  # in this thread: signals arrive at once
    assert loaded, reports[-3:]
    for phase in ("Dequantising the GGUF", "Timing the drafters"):
        shares = [f for text, f in reports if text.startswith(phase)]
        assert len(shares) >= 2, (phase, reports)
        assert shares == sorted(shares) and shares[0] < 0.5 and shares[-1] == 1.0, (phase, shares)
    assert all(0.0 <= f <= 1.0 for _, f in reports)
