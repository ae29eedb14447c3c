import json
import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tiny_gguf import write_tiny_gguf  # noqa: E402

SNAPSHOT = "0123456789abcdef0123456789abcdef01234567"
SUITE_CACHE = os.environ["SPECLENS_CACHE_DIR"]  # tests/conftest.py's: shared by the workers, kept between runs


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own conversion cache and an empty offline hub cache."""
    import huggingface_hub.constants as hub

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "speclens-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


@pytest.fixture
def suite_cache(monkeypatch):
    """The suite's shared cache instead of the test's own, for a test about what happens after a load, not
    about a first load: the embedded model's float copy is converted once for the suite (16 s), not again here."""
    monkeypatch.setenv("SPECLENS_CACHE_DIR", SUITE_CACHE)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf")


@pytest.fixture
def variant(tiny_pair_dirs, tmp_path):
    """Copy of the tiny target folder, edited by the test: variant(config_update=..., drop=[...])."""

    def make(config_update=None, drop=(), name="variant") -> Path:
        folder = tmp_path / name
        shutil.copytree(tiny_pair_dirs[0], folder)
        if config_update:
            config = json.loads((folder / "config.json").read_text())
            config.update(config_update)
            (folder / "config.json").write_text(json.dumps(config))
        for pattern in drop:
            for p in folder.glob(pattern):
                p.unlink()
        return folder

    return make


@pytest.fixture
def fake_hub(isolated_cache, tiny_pair_dirs) -> str:
    """org/tiny in the hub cache layout: models--org--tiny/{refs/main, snapshots/<hash>/...}."""
    repo = isolated_cache / "models--org--tiny"
    shutil.copytree(tiny_pair_dirs[0], repo / "snapshots" / SNAPSHOT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(SNAPSHOT)
    return "org/tiny"
