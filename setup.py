"""The native decode kernel (app/models/native/kernel.c), built once per instruction set.

The same source is compiled for AVX-512 VNNI, AVX2 and plain C; at run time app.models.native loads the
best build whose instructions this CPU has. Each is optional: without a C compiler SpecLens installs and runs
its torch paths, and says why native is off.

Windows (MSVC, as Python's own builds; Visual Studio 2022 17.5+ for C11 atomics): the AVX2 and generic builds,
with /fp:precise (no contraction since Visual Studio 2022, as -ffp-contract=off); the thread pool is csrc/pool.h's
Win32 shim. The AVX-512 VNNI build is GCC/clang only (GNU inline assembly, always_inline). No Windows machine
or MSVC runs here: tests/native/test_cross.py proves the same C built by mingw-w64 and run under wine.
Other CPUs (arm64: macOS, Linux) build the generic C.
"""

import sys
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "app/models/native/kernel.c"
HEADERS = sorted(str(p) for p in Path("app/models/native/csrc").glob("*.h"))  # one translation unit with kernel.c
COMMON = ["-O3", "-std=c11", "-ffp-contract=off", "-D_GNU_SOURCE", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
BUILDS = {
    "_kernel_avx512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mfma", "-mf16c"],
    "_kernel_avx2": ["-mavx2", "-mfma", "-mf16c"],
    "_kernel_generic": [],
}


# MSVC's (and clang-cl's) forms of COMMON and BUILDS: /fp:precise keeps each operation rounded on its own
# (Visual Studio 2022 contracts only under /fp:contract or /fp:fast), /std:c11 with C11 atomics for pool.h
MSVC_COMMON = ["/O2", "/std:c11", "/experimental:c11atomics", "/fp:precise", "/W3"]
MSVC_BUILDS = {
    "_kernel_avx2": ["/arch:AVX2"],
    "_kernel_generic": [],
}


def extensions() -> list[Extension]:
    x86 = __import__("platform").machine().lower() in ("x86_64", "amd64", "i686", "i386")
    if sys.platform == "win32":
        names = MSVC_BUILDS if x86 else {"_kernel_generic": []}
        common, link = MSVC_COMMON, []
    else:
        names = BUILDS if x86 else {"_kernel_generic": []}
        common, link = COMMON, ["-lpthread", "-lm"]
    return [
        Extension(f"app.models.native.{name}", [SOURCE], define_macros=[("SL_MODULE", name)], depends=HEADERS,
                  extra_compile_args=common + flags, extra_link_args=link, optional=True)
        for name, flags in names.items()
    ]


setup(ext_modules=extensions())
