"""The frozen app the tests run, built once per content and kept in the user's cache.

`python tests/packaging/frozen_cache.py` builds it ahead of the tests: the README's test command starts it in the
background as soon as the packages are installed, so the build's few minutes overlap the lint, the fetches and
the first tests instead of adding to them. tests/packaging/test_frozen_build.py takes the same build through
`frozen_app()`: one build per key at a time (a file lock), so the test waits for a build under way and finds it
done instead of making a second one.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import platform
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_S = 1200
PREBUILD_ENV = "SPECLENS_FROZEN_PREBUILD"  # set by packaging/setup.sh while it builds in the background


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
    # The interpreter's own packages, not whatever else is on sys.path: pytest puts the checkout there, whose
    # speclens.egg-info (an editable install's) made the tests' key differ from the background build's.
    site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    for dist in sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions(path=site)):
        h.update(dist.encode())
    return h.hexdigest()[:20]


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "speclens-tests" / "frozen"


@contextlib.contextmanager
def _only_builder(lock: Path) -> Iterator[None]:
    """Held while one process checks for and makes the build of one key; another waits here for it."""
    try:
        import fcntl
    except ImportError:  # Windows: no lock; two builds of one key only cost time
        yield
        return
    with open(lock, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def frozen_app() -> Path:
    """The one-folder app for these sources (dist/SpecLens inside the cache entry): the one built before for
    this key, the one a build under way is making (waited for), or built now. The two newest builds are kept,
    for a branch switched back."""
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    key = build_key()
    done = cache / key
    with _only_builder(cache / f".{key}.lock"):
        if not (done / "complete").is_file():
            _build_into(done)
        os.utime(done)
    for old in sorted((p for p in cache.iterdir() if p.is_dir() and p != done), key=lambda p: p.stat().st_mtime)[:-1]:
        shutil.rmtree(old, ignore_errors=True)
        (cache / f".{old.name}.lock").unlink(missing_ok=True)  # each build left its lock file behind
    return done / "dist" / "SpecLens"


def _build_into(done: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="speclens-frozen-") as tmp:
        out = Path(tmp)
        subprocess.run([sys.executable, str(ROOT / "packaging" / "build.py"), "--dist", str(out / "dist"),
                        "--work", str(out / "work")], cwd=ROOT, check=True, timeout=BUILD_TIMEOUT_S)
        staging = done.parent / f".{done.name}.{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        shutil.move(str(out / "dist"), str(staging / "dist"))
    (staging / "complete").write_text("built\n")
    shutil.rmtree(done, ignore_errors=True)
    staging.rename(done)


if __name__ == "__main__":
    # setup.sh stops this on a failed lint: an exception, so subprocess.run stops PyInstaller too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(frozen_app())
