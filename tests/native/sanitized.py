"""The native kernel built again under AddressSanitizer and UBSan, one module per build, for tests that run
it in a process of their own (LD_PRELOAD of the ASan runtime, which must be the first library loaded)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "app" / "native" / "kernel.c"
X86_BUILDS = {  # as setup.py's, which the test checks
    "_kernel_avx512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mfma", "-mf16c"],
    "_kernel_avx2": ["-mavx2", "-mfma", "-mf16c"],
    "_kernel_generic": [],
}
ARM64_BUILDS = {
    "_kernel_i8mm": ["-march=armv8.2-a+dotprod+i8mm"],
    "_kernel_neon": ["-march=armv8.2-a+dotprod"],
    "_kernel_generic": [],
}
_MACHINE = platform.machine().lower()
BUILDS = (X86_BUILDS if _MACHINE in ("x86_64", "amd64", "i686", "i386")
          else ARM64_BUILDS if _MACHINE in ("arm64", "aarch64") else {"_kernel_generic": []})  # this machine's
FLAGS = ["-O1", "-g", "-std=c11", "-ffp-contract=off", "-D_GNU_SOURCE", "-fno-math-errno", "-fPIC", "-shared",
         "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"]


def compiler() -> str | None:
    """gcc or cc where it has the sanitizer runtimes, else None."""
    for cc in ("gcc", "cc"):
        try:
            lib = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if lib.returncode == 0 and Path(lib.stdout.strip()).is_file():
            return cc
    return None


def asan_runtime(cc: str) -> str:
    return subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True, check=True).stdout.strip()


def build(cc: str, out: Path, names=tuple(BUILDS), source: Path = SOURCE) -> Path:
    """The sanitized builds in `out` (a folder put first on sys.path by the driver)."""
    out.mkdir(parents=True, exist_ok=True)
    include = sysconfig.get_paths()["include"]
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    for name in names:
        cmd = [cc, *FLAGS, *BUILDS[name], f"-DSL_MODULE={name}", f"-I{include}", f"-I{SOURCE.parent}", str(source),
               "-o", str(out / f"{name}{suffix}"), "-lpthread", "-lm"]
        subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300)
    return out


def build_cached(cc: str) -> Path:
    """Every build, sanitized, in a folder of this checkout's build/ named for the sources and flags: the
    sanitizer test and the native fuzzer share one compile, and a rerun of the suite none."""
    sources = sorted([SOURCE, *(SOURCE.parent / "csrc").rglob("*.h")])
    key = hashlib.sha256(b"".join(p.read_bytes() for p in sources) + repr((FLAGS, BUILDS, cc)).encode()).hexdigest()[:16]
    final = ROOT / "build" / f"sanitized-kernels-{key}"
    if final.is_dir():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".sanitized-", dir=final.parent))
    build(cc, tmp)
    try:
        os.replace(tmp, final)  # another worker may have finished first: its folder is as good
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def run(cc: str, modules: Path, script: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """script under the sanitizers, with the builds in `modules` importable as app.native's."""
    env = dict(os.environ, LD_PRELOAD=asan_runtime(cc), SANITIZED_KERNELS=str(modules),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


if __name__ == "__main__":
    # packaging/setup.sh compiles these while the packages install: they need only the C sources, the
    # interpreter's headers and a compiler, and the suite's sanitizer tests then find them built.
    if (found := compiler()) is not None:
        print(build_cached(found))
