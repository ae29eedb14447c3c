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
platform with the reason. The builds (cross/builds.py) are compiled once per content, ahead of the tests where
the README's test command runs. A NEON build is one more CONFIGS entry (its flags, same compiler and runner)."""

from __future__ import annotations

import ast
import os
import re
import struct
import subprocess
from pathlib import Path

import pytest
from cross import inputs
from cross.builds import (
    CONFIGS,
    DRIFT_BUGS,
    FLAGS,
    REFERENCE,
    ROOT,
    ROW_BUGS,
    THREAD_LAYERS,
    WAKE_BUG,
    Config,
    arithmetic,
    built,
    every_build,
)

INTEGER_TAGS = {"D": "activation digits", "G": "greedy tokens", "A": "argmax of each row"}
FLOAT_TAGS = {"S": "digit sums", "M": "matrix outputs", "L": "logits"}
FLOAT_BOUND_ULP = 0  # measured: every float output equals the reference's bits on arm64 and on Windows
pytestmark = pytest.mark.xdist_group("cross")  # one worker: one wine prefix, builds that share the inputs


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
def reference(data) -> dict:
    if REFERENCE.missing():
        pytest.skip(REFERENCE.missing())
    rc, outputs = run(REFERENCE, built(REFERENCE), data)
    assert rc == 0 and ("FAIL",) not in outputs, outputs.get(("FAIL",))
    return outputs


def test_the_inputs_cover_every_block_type_and_odd_shapes():
    kinds = set()
    for case in inputs.CASES.values():
        kinds |= {*case[7], *case[8], *case[9], *case[10:13]}
    assert kinds == set(inputs.UNIT), kinds
    assert any(case[5] % 16 for case in inputs.CASES.values())  # a vocabulary that is not whole panels
    assert any(case[3] % 16 for case in inputs.CASES.values())  # a head_dim the vector attention does not take


def test_the_prebuild_makes_every_build_the_tests_run():
    """setup.sh's prebuild (cross/builds.py) compiles what the tests below ask for, so none compiles twice."""
    asked = {(REFERENCE, ())} | {(c, ()) for c in CONFIGS} | {(c, ROW_BUGS[arithmetic(c)]) for c in [REFERENCE, *CONFIGS]}
    asked |= {(c, DRIFT_BUGS[arithmetic(c)]) for c in CONFIGS} | {(c, WAKE_BUG) for c in THREAD_LAYERS}
    assert set(every_build()) == asked and len(every_build()) == len(asked)


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
def test_the_cross_build_equals_the_reference(config, data, reference):
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, built(config), data)
    assert rc == 0 and ("FAIL",) not in outputs, f"{config.name}: rows differ across row counts or threads: " \
                                                  f"{outputs.get(('FAIL',), [])[:5]}"
    assert differences(reference, outputs) == []


@pytest.mark.parametrize("config", [REFERENCE, *CONFIGS], ids=[c.name for c in [REFERENCE, *CONFIGS]])
def test_a_row_that_depends_on_its_tile_is_caught(config, data):
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, built(config, ROW_BUGS[arithmetic(config)]), data)
    assert rc != 0 and any("rows" in line for line in outputs.get(("FAIL",), [])), outputs.get(("FAIL",))


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_a_port_that_drifts_from_the_reference_is_caught(config, data, reference):
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, built(config, DRIFT_BUGS[arithmetic(config)]), data)
    assert rc == 0, outputs.get(("FAIL",))  # consistent with itself: only the reference shows the drift
    found = differences(reference, outputs)
    assert any(f.startswith("matrix outputs") for f in found), found


@pytest.mark.parametrize("config", THREAD_LAYERS, ids=[c.name for c in THREAD_LAYERS])
def test_a_pool_whose_sleeping_workers_are_never_woken_is_caught(config, data):
    """Every output stays right when no worker joins (the caller claims every item): the harness's thread probe
    (3 threads join a task, sleep once settled, and join the next) is what sees the thread layer work."""
    if config.missing():
        pytest.skip(config.missing())
    rc, outputs = run(config, built(config, WAKE_BUG), data)
    assert rc != 0 and any("threads-join" in line for line in outputs.get(("FAIL",), [])), outputs.get(("FAIL",))
