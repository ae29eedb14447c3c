"""The native decode kernel (app/native/kernel.c), built once per instruction set.

The same source is compiled for AVX-512 VNNI, AVX2 and plain C on x86 (NEON with the dot product and i8mm, NEON
with the dot product, and plain C on arm64); at run time app.native loads the best build whose instructions this
CPU has. Each is optional: without a C compiler SpecLens installs and runs its torch paths, and says why native
is off.

Windows (MSVC, as Python's own builds; Visual Studio 2022 17.5+ for C11 atomics): the AVX2 and generic builds,
with /fp:precise (no contraction since Visual Studio 2022, as -ffp-contract=off); the thread pool is csrc/pool.h's
Win32 shim. The AVX-512 VNNI build is GCC/clang only (GNU inline assembly, always_inline). No Windows machine
or MSVC runs here: tests/native/test_cross.py proves the same C built by mingw-w64 and run under wine.
"""

import platform
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = "app/native/kernel.c"
HEADERS = sorted(str(p) for p in Path("app/native/csrc").rglob("*.h"))  # csrc/ and csrc/arch/: one unit with kernel.c
COMMON = ["-O3", "-std=c11", "-ffp-contract=off", "-D_GNU_SOURCE", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
X86_BUILDS = {
    "_kernel_avx512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mfma", "-mf16c"],
    "_kernel_avx2": ["-mavx2", "-mfma", "-mf16c"],
    "_kernel_generic": [],
}
ARM64_BUILDS = {
    "_kernel_i8mm": ["-march=armv8.2-a+dotprod+i8mm"],
    "_kernel_neon": ["-march=armv8.2-a+dotprod"],
    "_kernel_generic": [],
}
MACHINE = platform.machine().lower()
X86, ARM64 = MACHINE in ("x86_64", "amd64", "i686", "i386"), MACHINE in ("arm64", "aarch64")
BUILDS = X86_BUILDS if X86 else ARM64_BUILDS if ARM64 else {"_kernel_generic": []}  # this machine's


# MSVC's (and clang-cl's) forms of COMMON and BUILDS: /fp:precise keeps each operation rounded on its own
# (Visual Studio 2022 contracts only under /fp:contract or /fp:fast), /std:c11 with C11 atomics for pool.h
MSVC_COMMON = ["/O2", "/std:c11", "/experimental:c11atomics", "/fp:precise", "/W3"]
MSVC_BUILDS = {
    "_kernel_avx2": ["/arch:AVX2"],
    "_kernel_generic": [],
}


def extensions() -> list[Extension]:
    if sys.platform == "win32":
        names = MSVC_BUILDS if X86 else {"_kernel_generic": []}
        common, link = MSVC_COMMON, []
    else:
        names, common, link = BUILDS, COMMON, ["-lpthread", "-lm"]
    return [
        Extension(f"app.native.{name}", [SOURCE], define_macros=[("SL_MODULE", name)], depends=HEADERS,
                  extra_compile_args=common + flags, extra_link_args=link, optional=True)
        for name, flags in names.items()
    ]


class BuildEachAtOnce(build_ext):
    """The builds compile side by side (a compiler a core, as `build_ext --parallel`): each is the whole kernel at
    -O3 and the install waits for them (the three x86 builds on 2 cores: 28 s one after another, 17 s so)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = True


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildEachAtOnce})
