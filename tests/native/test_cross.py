"""The native kernel's C on the laptops people bring, proven here by cross-builds run under emulation: the pure-C
harness (tests/native/cross/harness.c: the csrc headers, no Python) built for arm64 and run under
`qemu-aarch64 -cpu max`, and built with mingw-w64 and run under wine, against the same harness built natively
for x86-64 with no SIMD flags (the generic reference) on the same inputs (cross/inputs.py: SpecLens's own
packing code, every block type, odd shapes).

What holds, measured: on every platform each row is bit-identical across row counts (1..n) and thread counts
(1..3) (the harness checks that itself), and every output equals the reference's exactly: the integer parts
(activation digits, greedy tokens, argmaxes) and the float parts (digit sums, every matrix's outputs, the
logits). The float bound is therefore 0 ulp; it holds on Windows because csrc/portable.h computes fmaf there
(mingw-w64's own fmaf is not correctly rounded: before it, matmul outputs differed by ~1e-7 of the row's
largest). A libm difference elsewhere (expf) would show here as a failure to look at, not pass inside a bound.
Not run here: MSVC's build, which links the UCRT (its expf, sqrtf and nearbyintf), and Apple's libm.

Each platform has planted-bug twins, built from a patched copy of csrc: one where a row's sum depends on how
many rows share its tile (the harness's own row check must catch it), one where the port's block update is
mul + add instead of fmaf (rows stay consistent; the comparison with the reference must catch it). The thread
layers (pthreads, the Win32 shim in csrc/pool.h) have one where settled workers are never woken: outputs stay
right (the caller does the work alone), and the harness's thread probe must see it.

Toolchains: packaging/cross_tools.sh installs them (CI: packaging/setup.sh test); a missing one skips its
platform with the reason. A NEON build is one more CONFIGS entry (its flags, same compiler and runner)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from cross import inputs

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "app" / "native" / "csrc"
HARNESS = Path(__file__).resolve().parent / "cross" / "harness.c"
# setup.py's COMMON flags (test_the_harness_builds_with_setup_pys_flags), at -O2 for a quicker compile: without
# -ffast-math the optimisation level changes no float result
FLAGS = ["-O2", "-std=c11", "-ffp-contract=off", "-fno-math-errno", "-D_GNU_SOURCE", "-Wall", "-Wno-unused-function"]
# A planted twin only shows that a check catches its bug, so it builds at -Og: a quarter of -O2's compile (1.6
# against 6.4 s for arm64, measured), and the reference's outputs are the same bits at -O0, -Og, -O1 and -O2
TWIN_LEVEL = "-Og"
INTEGER_TAGS = {"D": "activation digits", "G": "greedy tokens", "A": "argmax of each row"}
FLOAT_TAGS = {"S": "digit sums", "M": "matrix outputs", "L": "logits"}
FLOAT_BOUND_ULP = 0  # measured: every float output equals the reference's bits on arm64 and on Windows
pytestmark = pytest.mark.xdist_group("cross")  # one worker: one wine prefix, builds that share the inputs


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


def build(config: Config, out: Path, csrc: Path = CSRC) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    exe = out / config.exe
    flags = FLAGS if csrc == CSRC else [TWIN_LEVEL, *FLAGS[1:]]
    cmd = [config.compiler, *flags, *config.flags, f"-I{csrc}", str(HARNESS), "-o", str(exe), "-lm"]
    if not config.runner:
        cmd.append("-lpthread")
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{config.name} build failed:\n{done.stderr[-4000:]}"
    return exe


def wine_env() -> dict:
    # kept between runs (wine's first start makes it: ~3 s), outside the checkout: a prefix holds a link to /
    # (dosdevices/z:), and a tool that walks the checkout (setuptools) would walk the whole disk
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    prefix = cache / "speclens" / "wine-prefix"
    prefix.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, WINEDEBUG="-all", WINEPREFIX=str(prefix), WINEDLLOVERRIDES="mscoree,mshtml=")


def run(config: Config, exe: Path, data: Path) -> tuple[int, dict]:
    env = wine_env() if config.exe.endswith(".exe") else None
    done = subprocess.run([*config.runner, str(exe), str(data)], capture_output=True, text=True, timeout=600, env=env)
    lines = done.stdout.replace("\r\n", "\n").splitlines()
    assert lines and lines[-1].startswith("END "), f"{config.name}: no END line\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    outputs = {}
    for line in lines:
        tag, *rest = line.split(" ")
        if tag in INTEGER_TAGS or tag in FLOAT_TAGS:
            outputs[(tag, rest[0], rest[1])] = rest[2:]
        elif tag == "FAIL":
            outputs.setdefault(("FAIL",), []).append(line)
    return done.returncode, outputs


def _ordered(bits: str) -> int:
    v = int(bits, 16)
    return v if v < 0x80000000 else 0x80000000 - v


def differences(ref: dict, got: dict) -> list[str]:
    """What differs, by kind: integer parts exactly, float parts beyond FLOAT_BOUND_ULP (with the largest gap)."""
    found = []
    if set(ref) != set(got):
        found.append(f"outputs present in one only: {sorted(set(ref) ^ set(got))[:5]}")
    for kinds, exact in ((INTEGER_TAGS, True), (FLOAT_TAGS, False)):
        for tag, what in kinds.items():
            keys = [k for k in ref if k[0] == tag and k in got]
            if exact:
                bad = [k for k in keys if ref[k] != got[k]]
                if bad:
                    found.append(f"{what}: {len(bad)} of {len(keys)} differ, first {bad[0]}")
                continue
            worst, count = 0, 0
            for k in keys:
                gap = max((abs(_ordered(a) - _ordered(b)) for a, b in zip(ref[k], got[k], strict=False)), default=0)
                if gap > FLOAT_BOUND_ULP or len(ref[k]) != len(got[k]):
                    count, worst = count + 1, max(worst, gap)
            if count:
                found.append(f"{what}: {count} of {len(keys)} rows beyond {FLOAT_BOUND_ULP} ulp (worst {worst} ulp)")
    return found


def as_floats(bits: list[str]) -> list[float]:
    return [struct.unpack("<f", int(b, 16).to_bytes(4, "little"))[0] for b in bits]


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return inputs.write(tmp_path_factory.mktemp("cross") / "inputs.bin")


@pytest.fixture(scope="module")
def reference(data, tmp_path_factory) -> dict:
    if REFERENCE.missing():
        pytest.skip(REFERENCE.missing())
    rc, outputs = run(REFERENCE, build(REFERENCE, tmp_path_factory.mktemp("reference")), data)
    assert rc == 0 and ("FAIL",) not in outputs, outputs.get(("FAIL",))
    return outputs


# The planted twins: (file, the line as csrc has it, the line planted)
# Each planted twin goes where the build under test does its arithmetic: the plain-C reference for the generic
# builds, csrc/arch's own form for a vectorised one (the i8mm build's pairs of rows, beside NEON's single rows).
ROW_BUGS = {  # the last row of a multi-row tile rounds its update apart
    "ref": [("acc[r][c] = fmaf(m[h][c], sa, acc[r][c]);",
             "acc[r][c] = (R > 1 && r == R - 1) ? m[h][c] * sa + acc[r][c] : fmaf(m[h][c], sa, acc[r][c]);")],
    "neon": [("acc[r][q] = vfmaq_f32(acc[r][q], vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa));",
              "acc[r][q] = (R > 1 && r == R - 1) ? vaddq_f32(vmulq_f32(vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa)), "
              "acc[r][q]) : vfmaq_f32(acc[r][q], vld1q_f32(m[h] + 4 * q), vdupq_n_f32(sa));")],
    "i8mm": [("acc[q] = vfmaq_f32(acc[q], vld1q_f32(m + 4 * q), vdupq_n_f32(sa));",  # pairs apart from single rows
              "acc[q] = vaddq_f32(vmulq_f32(vld1q_f32(m + 4 * q), vdupq_n_f32(sa)), acc[q]);")],
    "avx2": [("acc[r][v] = _mm256_fmadd_ps(_mm256_load_ps(m[h] + 8 * v), _mm256_set1_ps(sa), acc[r][v]);",
              "acc[r][v] = (R > 1 && r == R - 1) ? _mm256_add_ps(_mm256_mul_ps(_mm256_load_ps(m[h] + 8 * v), "
              "_mm256_set1_ps(sa)), acc[r][v]) : _mm256_fmadd_ps(_mm256_load_ps(m[h] + 8 * v), _mm256_set1_ps(sa), "
              "acc[r][v]);")],
}
DRIFT_BUGS = {  # the port's block update: mul + add, on every row alike
    "ref": [("acc[r][c] = fmaf(d[h][c], f, acc[r][c]);", "acc[r][c] = d[h][c] * f + acc[r][c];")],
    "neon": [("acc[r][q] = vfmaq_f32(acc[r][q], vld1q_f32(d[h] + 4 * q), f);",
              "acc[r][q] = vaddq_f32(vmulq_f32(vld1q_f32(d[h] + 4 * q), f), acc[r][q]);")],
    "avx2": [("acc[r][v] = _mm256_fmadd_ps(_mm256_load_ps(d[h] + 8 * v), f, acc[r][v]);",
              "acc[r][v] = _mm256_add_ps(_mm256_mul_ps(_mm256_load_ps(d[h] + 8 * v), f), acc[r][v]);")],
}
DRIFT_BUGS["i8mm"] = DRIFT_BUGS["neon"] + [("acc[q] = vfmaq_f32(acc[q], vld1q_f32(d + 4 * q), f);",
                                            "acc[q] = vaddq_f32(vmulq_f32(vld1q_f32(d + 4 * q), f), acc[q]);")]
WAKE_BUG = [("sl_cond_broadcast(&pool.wake);", "(void)0;")]  # sleeping workers never woken: the caller works alone


def arithmetic(config: Config) -> str:
    """Which form of the tile the build runs: its flags say."""
    flags = " ".join(config.flags)
    return "i8mm" if "i8mm" in flags else "neon" if "dotprod" in flags else "avx2" if "-mavx2" in flags else "ref"


def planted(tmp: Path, bugs: list[tuple[str, str]]) -> Path:
    copy = tmp / "csrc"
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


def test_the_inputs_cover_every_block_type_and_odd_shapes():
    kinds = set()
    for case in inputs.CASES.values():
        kinds |= {*case[7], *case[8], *case[9], *case[10:13]}
    assert kinds == set(inputs.UNIT), kinds
    assert any(case[5] % 16 for case in inputs.CASES.values())  # a vocabulary that is not whole panels
    assert any(case[3] % 16 for case in inputs.CASES.values())  # a head_dim the vector attention does not take


def test_the_harness_builds_with_setup_pys_flags():
    common = re.search(r"^COMMON = (\[.*?\])$", (ROOT / "setup.py").read_text(), re.M)
    assert common, "setup.py's COMMON moved"
    assert set(FLAGS) - {"-O2"} <= set(ast.literal_eval(common.group(1))) and "-ffp-contract=off" in FLAGS


def test_the_reference_holds_its_rows_and_decodes(reference):
    greedy = [v for k, v in reference.items() if k[0] == "G"]
    assert len(greedy) == 2 * len(inputs.CASES) and all(len(g) == inputs.GREEDY + 1 for g in greedy)
    for name in inputs.CASES:  # greedy on 1 and on 3 threads agree, and decode the reference's own argmax
        assert reference[("G", name, "1")] == reference[("G", name, "3")]
        assert reference[("G", name, "1")][0] == reference[("A", name, str(inputs.PROMPT - 1))][0]
    logits = [as_floats(v) for k, v in reference.items() if k[0] == "L"]
    assert all(abs(x) < 1e3 for row in logits for x in row) and any(x != 0 for row in logits for x in row)


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_the_cross_build_equals_the_reference(config, data, reference, tmp_path):
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, build(config, tmp_path), data)
    assert rc == 0 and ("FAIL",) not in outputs, f"{config.name}: rows differ across row counts or threads: " \
                                                  f"{outputs.get(('FAIL',), [])[:5]}"
    assert differences(reference, outputs) == []


@pytest.mark.parametrize("config", [REFERENCE, *CONFIGS], ids=[c.name for c in [REFERENCE, *CONFIGS]])
def test_a_row_that_depends_on_its_tile_is_caught(config, data, tmp_path):
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, build(config, tmp_path, planted(tmp_path, ROW_BUGS[arithmetic(config)])), data)
    assert rc != 0 and any("rows" in line for line in outputs.get(("FAIL",), [])), outputs.get(("FAIL",))


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_a_port_that_drifts_from_the_reference_is_caught(config, data, reference, tmp_path):
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, build(config, tmp_path, planted(tmp_path, DRIFT_BUGS[arithmetic(config)])), data)
    assert rc == 0, outputs.get(("FAIL",))  # consistent with itself: only the reference shows the drift
    found = differences(reference, outputs)
    assert any(f.startswith("matrix outputs") for f in found), found


THREAD_LAYERS = [REFERENCE, next(c for c in CONFIGS if c.name == "windows-x86-64")]  # pthreads and the Win32 shim


@pytest.mark.parametrize("config", THREAD_LAYERS, ids=[c.name for c in THREAD_LAYERS])
def test_a_pool_whose_sleeping_workers_are_never_woken_is_caught(config, data, tmp_path):
    """Every output stays right when no worker joins (the caller claims every item): the harness's thread probe
    (3 threads join a task, sleep once settled, and join the next) is what sees the thread layer work."""
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, build(config, tmp_path, planted(tmp_path, WAKE_BUG)), data)
    assert rc != 0 and any("threads-join" in line for line in outputs.get(("FAIL",), [])), outputs.get(("FAIL",))
