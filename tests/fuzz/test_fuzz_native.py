"""The native boundary's fuzzer, bounded for the suite: coverage-guided on the installed builds (the ASan
runtime that gcc has breaks libFuzzer's coverage, so the guided phase runs without it), then the corpus it
found replayed and mutated further under AddressSanitizer and UBSan on every sanitized build. Its long runs
are by hand (fuzz_native.py says how)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "native"))
import sanitized  # noqa: E402

HARNESS = HERE / "fuzz_native.py"
cc = sanitized.compiler()
pytestmark = [pytest.mark.skipif(cc is None, reason="no C compiler with the sanitizer runtimes"),
              pytest.mark.xdist_group("sanitized")]


def test_the_native_fuzzer_finds_nothing(tmp_path):
    pytest.importorskip("atheris")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    guided = subprocess.run([sys.executable, str(HARNESS), "-max_total_time=10", str(corpus)],
                            capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(sanitized.ROOT)))
    assert guided.returncode == 0, guided.stderr[-4000:]
    assert "Done" in guided.stderr and any(corpus.iterdir())
    modules = sanitized.build_cached(cc)
    for args in (["-runs=0"], ["-max_total_time=6"]):  # the corpus once, then mutations of it
        run = sanitized.run(cc, modules, HARNESS, *args, str(corpus), timeout=180)
        assert run.returncode == 0, run.stderr[-4000:]
        assert "Done" in run.stderr
