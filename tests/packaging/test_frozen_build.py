"""Build the one-folder app and run its `selftest` as a user would: no venv, empty home and cache.

Slow (a PyInstaller build takes minutes): deselect with `-m "not slow"` while iterating.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELFTEST_TIMEOUT_S = 600

pytestmark = pytest.mark.slow


def listing(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def frozen_app() -> Path:
    """Built once for these sources and kept under the user's cache by its key (frozen_cache.py), or the build
    the README's test command started in the background, waited for. SPECLENS_FROZEN_APP=dist/SpecLens tests
    an existing build instead."""
    if prebuilt := os.environ.get("SPECLENS_FROZEN_APP"):
        return Path(prebuilt).resolve()
    from frozen_cache import frozen_app as cached  # this folder is on sys.path (pytest, rootdir imports)

    return cached()


def clean_env(home: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",  # no venv, no PYTHONPATH: only what the bundle carries
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "LANG": "C.UTF-8",
    }


def test_frozen_selftest_runs_offline_from_a_clean_environment(frozen_app, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(home)
    before = listing(frozen_app)
    proc = subprocess.run(
        [str(frozen_app / "SpecLens"), "selftest", "--device", "cpu"],
        cwd=home, env=env, capture_output=True, text=True, timeout=SELFTEST_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "outputs identical: yes" in proc.stdout
    assert "SmolLM2-135M-Instruct (embedded)" in proc.stdout
    assert "main window opened and closed (offscreen)" in proc.stdout
    assert listing(frozen_app) == before, "the frozen app wrote into its own folder"


def test_frozen_version_matches_the_package(frozen_app):
    from app import __version__

    proc = subprocess.run([str(frozen_app / "SpecLens"), "--version"], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == f"speclens {__version__}"


def test_the_frozen_app_loads_every_usual_family(frozen_app, tmp_path):
    """llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3, phi3 and gpt2, each a tiny random-weight
    safetensors folder whose tokenizer goes through its family's class: a module left out of the
    bundle fails here, naming the model."""
    from tiny_families import FAMILIES, save_families

    save_families(tmp_path / "models")
    home = tmp_path / "home"
    home.mkdir()
    proc = subprocess.run(
        [str(frozen_app / "SpecLens"), "selftest", "--models", str(tmp_path / "models"), "--device", "cpu",
         "--max-new-tokens", "8"],
        cwd=home, env=clean_env(home), capture_output=True, text=True, timeout=SELFTEST_TIMEOUT_S,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("model ")]
    assert [line.split(":")[0] for line in lines] == [f"model {name}" for name in sorted(FAMILIES)]
    assert all(line.endswith("outputs identical: yes") for line in lines)


def test_the_background_build_and_the_tests_agree_on_its_key():
    """setup.sh builds the app with `python tests/packaging/frozen_cache.py`; the tests look it up from inside
    pytest, whose sys.path also holds the checkout (and an editable install's egg-info): one key for both, or the
    tests build it a second time."""
    from frozen_cache import build_key

    script = ROOT / "tests" / "packaging" / "frozen_cache.py"
    code = f"import runpy; print(runpy.run_path({str(script)!r}, run_name='key')['build_key']())"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT / "tests" / "packaging", capture_output=True,
                         text=True, timeout=120, check=True).stdout.strip()
    assert out == build_key()
