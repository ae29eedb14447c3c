"""The GUI-overhead measurement drives the real main window offscreen; no timing assertions."""

import pytest

from app.bench.prompts import load_suite
from app.engine import DecodeParams

pytest.importorskip("PySide6")


def test_gui_and_headless_produce_the_same_tokens(tiny_pair, tiny_suite, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path))
    from app.bench.gui_overhead import measure_gui_overhead

    params = DecodeParams(gamma=3, temperature=1.0, max_new_tokens=12, seed=5)
    result = measure_gui_overhead(tiny_pair, load_suite(str(tiny_suite)), params, repeats=1)
    assert result["same_tokens"] == [True, True]  # a fixed seed: the window changes nothing but speed
    assert result["headless_tps"] > 0 and result["gui_tps"] > 0
    assert result["overhead"] == pytest.approx(1 - result["gui_tps"] / result["headless_tps"])
