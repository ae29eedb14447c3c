"""The GGUF fuzzer runs clean for a short while here; its long runs are by hand (fuzz_gguf.py says how)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).with_name("fuzz_gguf.py")
sys.path.insert(0, str(HARNESS.parent))


def test_every_seed_reads_and_passes_fuzz_one(tmp_path):
    """The harness's own check accepts its seeds, so what the fuzzer reports is the mutations' doing."""
    from fuzz_gguf import fuzz_one, write_seeds

    from app.native.gguf.index import GgufIndex

    for seed in write_seeds(tmp_path):
        assert GgufIndex(seed).tensors, seed.name
        fuzz_one(seed.read_bytes())


def test_the_fuzzer_finds_nothing_in_12_seconds(tmp_path):
    pytest.importorskip("atheris")
    run = subprocess.run([sys.executable, str(HARNESS), "-max_total_time=12", str(tmp_path)],
                         capture_output=True, text=True, timeout=90)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "Done" in run.stderr and "runs in" in run.stderr
