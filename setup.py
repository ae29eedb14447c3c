"""The native decode kernel (app/native/kernel.c), built once per instruction set.

The same source is compiled for AVX-512 VNNI, AVX2 and plain C on x86 (NEON with the dot product and i8mm, NEON
with the dot product, and plain C on arm64); at run time app.native loads the best build whose instructions this CPU has. Each is optional: without a C compiler (or on Windows, where
the pthreads pool does not build) SpecLens installs and runs its torch paths, and says why native is off.
"""

import platform
import sys
from pathlib import Path

from setuptools import Extension, setup

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


def extensions() -> list[Extension]:
    if sys.platform == "win32":
        return []
    return [
        Extension(f"app.native.{name}", [SOURCE], define_macros=[("SL_MODULE", name)], depends=HEADERS,
                  extra_compile_args=COMMON + flags, extra_link_args=["-lpthread", "-lm"], optional=True)
        for name, flags in BUILDS.items()
    ]


setup(ext_modules=extensions())
