"""The native decode kernel (app/models/native/kernel.c), built once per instruction set.

The same source is compiled for AVX-512 VNNI, AVX2 and plain C; at run time app.models.native loads the
best build whose instructions this CPU has. Each is optional: without a C compiler (or on Windows, where
the pthreads pool does not build) SpecLens installs and runs its torch paths, and says why native is off.
"""

import sys
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "app/models/native/kernel.c"
HEADERS = sorted(str(p) for p in Path("app/models/native/csrc").rglob("*.h"))  # csrc/ and csrc/arch/: one unit with kernel.c
COMMON = ["-O3", "-std=c11", "-ffp-contract=off", "-D_GNU_SOURCE", "-fno-math-errno", "-Wall", "-Wno-unused-function"]
BUILDS = {
    "_kernel_avx512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512vnni", "-mfma", "-mf16c"],
    "_kernel_avx2": ["-mavx2", "-mfma", "-mf16c"],
    "_kernel_generic": [],
}


def extensions() -> list[Extension]:
    if sys.platform == "win32":
        return []
    x86 = __import__("platform").machine().lower() in ("x86_64", "amd64", "i686", "i386")
    names = BUILDS if x86 else {"_kernel_generic": []}
    return [
        Extension(f"app.models.native.{name}", [SOURCE], define_macros=[("SL_MODULE", name)], depends=HEADERS,
                  extra_compile_args=COMMON + flags, extra_link_args=["-lpthread", "-lm"], optional=True)
        for name, flags in names.items()
    ]


setup(ext_modules=extensions())
