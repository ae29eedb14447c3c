"""Build the one-folder desktop app with PyInstaller: dist/SpecLens/SpecLens (SpecLens.app on macOS).

Usage: python packaging/build.py [--dist DIR] [--work DIR] [--clean]
Prints the build time and the size of the result; exits with PyInstaller's status.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "packaging" / "speclens.spec"
APP_NAME = "SpecLens"


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def build(dist: Path, work: Path, clean: bool = False) -> Path:
    """Runs PyInstaller on the spec; returns the one-folder app directory. Raises on failure."""
    cmd = [sys.executable, "-m", "PyInstaller", str(SPEC), "--noconfirm", "--log-level", "WARN",
           "--distpath", str(dist), "--workpath", str(work)]
    if clean:
        cmd.append("--clean")
    subprocess.run(cmd, cwd=ROOT, check=True)
    return dist / APP_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default: dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="PyInstaller's work folder (default: build/)")
    parser.add_argument("--clean", action="store_true", help="empty PyInstaller's cache before building")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        app_dir = build(args.dist.resolve(), args.work.resolve(), args.clean)
    except subprocess.CalledProcessError as exc:
        print(f"build failed: PyInstaller exited with status {exc.returncode}", file=sys.stderr)
        return exc.returncode or 1
    seconds = time.perf_counter() - start
    size_mb = folder_size(app_dir) / 2**20
    print(f"built {app_dir} in {seconds:.0f} s, {size_mb:.0f} MiB; check it with: {app_dir / APP_NAME} selftest")
    return 0


if __name__ == "__main__":
    sys.exit(main())
