"""The native kernel under AddressSanitizer and UBSan, every build this CPU runs: the odd shapes (attention
narrower and wider than the hidden size, head dims 24 and 160, vocabularies that are not whole panels,
groups of 1 and 8) and every refused descriptor, in a process of its own. The planted twin is the heap
overflow this suite exists for (the attention buffer sized for heads x head_dim while the down projection
writes hidden-wide rows into it): built from a patched copy of the source, the sanitizer must stop it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import sanitized

from app.native import builds

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "sanitized_driver.py"

cc = sanitized.compiler()
pytestmark = [pytest.mark.skipif(cc is None, reason="no C compiler with the sanitizer runtimes"),
              pytest.mark.skipif(not builds(), reason="the native kernel is not built here"),
              pytest.mark.xdist_group("sanitized")]


def runnable_names() -> list[str]:
    return [Path(b.__file__).name.split(".")[0] for b in builds()]


def test_the_sanitized_builds_are_setup_pys():
    setup = (sanitized.ROOT / "setup.py").read_text()
    for name, flags in {**sanitized.X86_BUILDS, **sanitized.ARM64_BUILDS}.items():
        listed = ", ".join(re.escape(f'"{flag}"') for flag in flags)  # "+" in arm64's -march
        assert re.search(rf'"{name}": \[{listed}\]', setup), name
    assert '"-ffp-contract=off"' in setup and "-ffp-contract=off" in sanitized.FLAGS


def test_every_build_runs_the_odd_shapes_clean_under_the_sanitizers():
    modules = sanitized.build_cached(cc)
    done = sanitized.run(cc, modules, DRIVER)
    assert done.returncode == 0, done.stderr[-6000:]
    lines = done.stdout.splitlines()
    assert sum("refused" in line for line in lines) >= 40 * len(runnable_names())
    assert sum("narrow-attention" in line for line in lines) == len(runnable_names())
    assert sum("Q5_0" in line for line in lines) == len(runnable_names())  # GGML's small blocks ran


def test_the_planted_overflow_is_caught(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(sanitized.SOURCE.parent, source, ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.py"))
    forward = source / "csrc" / "forward.h"
    right = "int attw = aw > h ? aw : h;"
    assert right in forward.read_text()
    forward.write_text(forward.read_text().replace(right, "int attw = aw;"))
    modules = sanitized.build(cc, tmp_path / "kernels", ["_kernel_generic"], source / "kernel.c")
    done = sanitized.run(cc, modules, DRIVER, "narrow-attention")
    assert done.returncode != 0
    assert "heap-buffer-overflow" in done.stderr and "forward.h" in done.stderr, done.stderr[-3000:]
