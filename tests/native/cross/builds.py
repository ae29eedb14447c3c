"""The cross harness's builds (tests/native/test_cross.py): each platform's, and each planted twin's, compiled once
per content and kept in this checkout's build/cross-builds/.

Standard library only: `python3 tests/native/cross/builds.py` compiles them all while the README's test command
installs the packages (packaging/setup.sh runs it once the cross toolchains are in), since they need only the C
sources and the compilers. The tests take the same builds through `built()`: one compile per key at a time (a
file lock), so a test waits for a compile under way and finds it done instead of making a second one."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CSRC = ROOT / "app" / "native" / "csrc"
HARNESS = Path(__file__).resolve().parent / "harness.c"
CACHE = ROOT / "build" / "cross-builds"
# setup.py's COMMON flags (test_the_harness_builds_with_setup_pys_flags), at -O2 for a quicker compile: without
# -ffast-math the optimisation level changes no float result
FLAGS = ("-O2", "-std=c11", "-ffp-contract=off", "-fno-math-errno", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function")
# A planted twin only shows that a check catches its bug, so it builds at -Og: a quarter of -O2's compile (1.6
# against 6.4 s for arm64, measured), and the reference's outputs are the same bits at -O0, -Og, -O1 and -O2
TWIN_LEVEL = "-Og"


def _wine() -> str | None:
    for name in ("wine64", "wine"):
        if shutil.which(name):
            return shutil.which(name)
    return "/usr/lib/wine/wine64" if Path("/usr/lib/wine/wine64").is_file() else None  # Debian's, off PATH


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {f for line in text.splitlines() if line.startswith("flags") for f in line.split(":", 1)[1].split()}


@dataclass(frozen=True)
class Config:
    name: str
    compiler: str
    flags: tuple[str, ...]
    runner: tuple[str, ...]  # the emulator, () for a native run
    exe: str = "harness"
    needs_cpu: tuple[str, ...] = ()  # instructions this machine must have to run it
    hint: str = "packaging/cross_tools.sh installs the cross toolchains"

    def missing(self) -> str | None:
        flags = _cpu_flags()
        if any(f not in flags for f in self.needs_cpu):
            return f"this CPU lacks one of {', '.join(self.needs_cpu)}"
        for tool in (self.compiler, *self.runner[:1]):
            if not (shutil.which(tool) or Path(tool).is_file()):
                return f"{tool} not found ({self.hint})"
        return None


REFERENCE = Config("x86-64 generic", shutil.which("gcc") or "cc", (), (), hint="a C compiler for the reference")
CONFIGS = [
    Config("arm64", "aarch64-linux-gnu-gcc", ("-static",), ("qemu-aarch64", "-cpu", "max")),
    # setup.py's arm64 builds: NEON with sdot, and with smmla as well (qemu's `max` CPU has both)
    Config("arm64-neon", "aarch64-linux-gnu-gcc", ("-static", "-march=armv8.2-a+dotprod"), ("qemu-aarch64", "-cpu", "max")),
    Config("arm64-i8mm", "aarch64-linux-gnu-gcc", ("-static", "-march=armv8.2-a+dotprod+i8mm"),
           ("qemu-aarch64", "-cpu", "max")),
    Config("windows-x86-64", "x86_64-w64-mingw32-gcc", ("-static",), (_wine() or "wine64",), "harness.exe"),
    # setup.py's Windows AVX2 build (/arch:AVX2): the generic C with the FMA instruction for fmaf
    Config("windows-x86-64-avx2", "x86_64-w64-mingw32-gcc", ("-static", "-mavx2", "-mfma", "-mf16c"),
           (_wine() or "wine64",), "harness.exe", needs_cpu=("avx2", "fma", "f16c")),
]
THREAD_LAYERS = [REFERENCE, next(c for c in CONFIGS if c.name == "windows-x86-64")]  # pthreads and the Win32 shim

Bugs = tuple[tuple[str, str], ...]  # (the line as csrc has it, the line planted)

# The planted twins. Each goes where the build under test does its arithmetic: the plain-C reference for the
# generic builds, csrc/arch's own form for a vectorised one (the i8mm build's pairs of rows, beside NEON's single rows).
ROW_BUGS: dict[str, Bugs] = {  # the last row of a multi-row tile rounds its update apart
    "ref": (("acc[r][c] = fmaf(m[h][c], sa, acc[r][c]);",
             "acc[r][c] = (R > 1 && r == R - 1) ? m[h][c] * sa + acc[r][c] : fmaf(m[h][c], sa, acc[r][c]);"),),
    "neon": (("acc[r][q] = vfmaq_f32(acc[r][q], vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa));",
              "acc[r][q] = (R > 1 && r == R - 1) ? vaddq_f32(vmulq_f32(vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa)), "
              "acc[r][q]) : vfmaq_f32(acc[r][q], vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa));"),),
    "i8mm": (("acc[q] = vfmaq_f32(acc[q], vld1q_f32(m + 4 * q), vdupq_n_f32(sa));",  # pairs apart from single rows
              "acc[q] = vaddq_f32(vmulq_f32(vld1q_f32(m + 4 * q), vdupq_n_f32(sa)), acc[q]);"),),
    "avx2": (("acc[r][v] = _mm256_fmadd_ps(_mm256_load_ps(m[h] + 8 * v), _mm256_set1_ps(sa), acc[r][v]);",
              "acc[r][v] = (R > 1 && r == R - 1) ? _mm256_add_ps(_mm256_mul_ps(_mm256_load_ps(m[h] + 8 * v), "
              "_mm256_set1_ps(sa)), acc[r][v]) : _mm256_fmadd_ps(_mm256_load_ps(m[h] + 8 * v), _mm256_set1_ps(sa), "
              "acc[r][v]);"),),
}
DRIFT_BUGS: dict[str, Bugs] = {  # the port's block update: mul + add, on every row alike
    "ref": (("acc[r][c] = fmaf(d[h][c], f, acc[r][c]);", "acc[r][c] = d[h][c] * f + acc[r][c];"),),
    "neon": (("acc[r][q] = vfmaq_f32(acc[r][q], vld1q_f32(d[h] + 4 * q), f);",
              "acc[r][q] = vaddq_f32(vmulq_f32(vld1q_f32(d[h] + 4 * q), f), acc[r][q]);"),),
    "avx2": (("acc[r][v] = _mm256_fmadd_ps(_mm256_load_ps(d[h] + 8 * v), f, acc[r][v]);",
              "acc[r][v] = _mm256_add_ps(_mm256_mul_ps(_mm256_load_ps(d[h] + 8 * v), f), acc[r][v]);"),),
}
DRIFT_BUGS["i8mm"] = DRIFT_BUGS["neon"] + (("acc[q] = vfmaq_f32(acc[q], vld1q_f32(d + 4 * q), f);",
                                            "acc[q] = vaddq_f32(vmulq_f32(vld1q_f32(d + 4 * q), f), acc[q]);"),)
WAKE_BUG: Bugs = (("sl_cond_broadcast(&pool.wake);", "(void)0;"),)  # sleeping workers never woken: the caller works alone


def arithmetic(config: Config) -> str:
    """Which form of the tile the build runs: its flags say."""
    flags = " ".join(config.flags)
    return "i8mm" if "i8mm" in flags else "neon" if "dotprod" in flags else "avx2" if "-mavx2" in flags else "ref"


def every_build() -> list[tuple[Config, Bugs]]:
    """What test_cross.py builds, in the order it runs them: the reference and each platform, then the twins."""
    return [(REFERENCE, ()), *((c, ()) for c in CONFIGS), *((c, ROW_BUGS[arithmetic(c)]) for c in [REFERENCE, *CONFIGS]),
            *((c, DRIFT_BUGS[arithmetic(c)]) for c in CONFIGS), *((c, WAKE_BUG) for c in THREAD_LAYERS)]


def key(config: Config, bugs: Bugs) -> str:
    """The sources (the harness and every csrc file, by content), the compiler, the flags and the plants."""
    h = hashlib.sha256(repr((config.compiler, config.flags, config.exe, FLAGS, TWIN_LEVEL, bugs)).encode())
    for path in [HARNESS, *sorted(p for p in CSRC.rglob("*") if p.is_file())]:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:20]


def built(config: Config, bugs: Bugs = ()) -> Path:
    """The harness built for `config` with `bugs` planted: the one compiled before for these sources, the one a
    compile under way is making (waited for), or compiled now. AssertionError with the compiler's words on failure."""
    CACHE.mkdir(parents=True, exist_ok=True)
    k = key(config, bugs)
    done = CACHE / k
    with _only_builder(CACHE / f".{k}.lock"):
        if not (done / config.exe).is_file():
            scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=CACHE))
            try:
                _compile(config, scratch, _planted(scratch, bugs) if bugs else CSRC, TWIN_LEVEL if bugs else FLAGS[0])
                shutil.rmtree(done, ignore_errors=True)
                os.replace(scratch, done)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    return done / config.exe


def _compile(config: Config, out: Path, csrc: Path, level: str) -> None:
    cmd = [config.compiler, level, *FLAGS[1:], *config.flags, f"-I{csrc}", str(HARNESS), "-o", str(out / config.exe), "-lm"]
    if not config.runner:
        cmd.append("-lpthread")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{config.name} build failed:\n{done.stderr[-4000:]}"


def _planted(out: Path, bugs: Bugs) -> Path:
    copy = out / "csrc"
    shutil.copytree(CSRC, copy)
    for old, new in bugs:
        hits = 0
        for header in copy.rglob("*.h"):
            text = header.read_text()
            if old in text:
                header.write_text(text.replace(old, new))
                hits += 1
        assert hits, f"`{old}` moved: plant the twin where it is now"
    return copy


@contextlib.contextmanager
def _only_builder(lock: Path) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # no flock (Windows): the cross toolchains are Linux packages anyway
        yield
        return
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":
    # packaging/setup.sh runs this once the cross toolchains are installed, while the packages install
    current = {key(config, bugs) for config, bugs in every_build()}
    for old in CACHE.glob("*") if CACHE.is_dir() else ():  # builds of sources as they were
        if old.is_dir() and old.name not in current and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)
    for config, bugs in every_build():
        if config.missing() is None:
            try:
                print(built(config, bugs), flush=True)
            except (AssertionError, OSError, subprocess.SubprocessError) as exc:  # the test compiles it and says why
                print(f"{config.name}: {exc}", file=sys.stderr)
