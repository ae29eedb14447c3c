"""Run under the sanitizers (tests/native/sanitized.py): the odd-shape checks, GGML's small blocks on an odd
shape and the refused descriptors on every sanitized build. Any out-of-bounds access or undefined behaviour ends the process with the
sanitizer's report; success prints one line per check."""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import app.native as native_package  # noqa: E402

folder = Path(os.environ["SANITIZED_KERNELS"])
suffix = sysconfig.get_config_var("EXT_SUFFIX")
builds = []
for path in sorted(folder.glob(f"_kernel_*{suffix}")):
    name = f"app.native.{path.name.removesuffix(suffix)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.cpu_ok():  # built for every instruction set; run where this CPU has it
        sys.modules[name] = module
        builds.append(module)

from odd_shapes import SHAPES, check_all, check_small_blocks  # noqa: E402
from refusals import check_refusals  # noqa: E402

assert builds and all(b in native_package.builds() for b in builds), "a sanitized build does not run here"
shapes = sys.argv[1:] or list(SHAPES)
for build in builds:
    for line in check_all(build, shapes) + check_small_blocks(build) + check_refusals(build):
        print("ok", line, flush=True)
