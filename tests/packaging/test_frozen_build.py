"""Build the one-folder app and run its `selftest` as a user would: no venv, empty home and cache.

Slow (a PyInstaller build takes minutes): deselect with `-m "not slow"` while iterating.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1200
SELFTEST_TIMEOUT_S = 600

pytestmark = pytest.mark.slow


def listing(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


def build_key() -> str:
    """Everything that goes into the bundle: the tracked sources, packaging and resources by content, the native
    builds beside them, the interpreter and every installed distribution's version. Equal keys, equal bundles."""
    h = hashlib.sha256(f"{sys.version} {platform.platform()}".encode())
    tracked = subprocess.run(["git", "ls-files", "-z", "app", "packaging", "resources", "setup.py", "pyproject.toml"],
                             cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    built = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.so"))
    for name in sorted(filter(None, tracked)) + built:
        path = ROOT / name
        if path.is_file():
            h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    for dist in sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions()):
        h.update(dist.encode())
    return h.hexdigest()[:20]


@pytest.fixture(scope="module")
def frozen_app(tmp_path_factory) -> Path:
    """Built once for these sources: kept under the user's cache by build_key(), so a rerun of the suite on the
    same sources and packages tests the bundle it built before instead of spending minutes making it again (a
    change to any source, resource or package builds anew; the two newest are kept).
    SPECLENS_FROZEN_APP=dist/SpecLens tests an existing build instead."""
    if prebuilt := os.environ.get("SPECLENS_FROZEN_APP"):
        return Path(prebuilt).resolve()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "speclens-tests" / "frozen"
    done = cache / build_key()
    if (done / "complete").is_file():
        os.utime(done)
        return done / "dist" / "SpecLens"
    out = tmp_path_factory.mktemp("frozen")
    subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "build.py"), "--dist", str(out / "dist"), "--work", str(out / "work")],
        cwd=ROOT, check=True, timeout=BUILD_TIMEOUT_S,
    )
    cache.mkdir(parents=True, exist_ok=True)
    staging = cache / f".{done.name}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.move(str(out / "dist"), str(staging / "dist"))
    (staging / "complete").write_text("built\n")
    shutil.rmtree(done, ignore_errors=True)
    staging.rename(done)
    for old in sorted((p for p in cache.iterdir() if p.is_dir() and p != done), key=lambda p: p.stat().st_mtime)[:-1]:
        shutil.rmtree(old, ignore_errors=True)  # the newest other build stays, for a branch switched back
    return done / "dist" / "SpecLens"


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
