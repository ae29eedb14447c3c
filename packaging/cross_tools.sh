#!/usr/bin/env bash
# The cross toolchains tests/native/test_cross.py runs the kernel's C harness with: gcc for arm64 under
# qemu-aarch64, and mingw-w64 under wine (Debian's packages, 64-bit only). Idempotent: nothing to do when
# they are all here. Installs them with apt-get when running as root where apt-get exists (CI: ~30 s, 214 MB
# of archives; apt's own cache keeps them); otherwise says so, and the cross tests skip, each naming what it
# lacks. SPECLENS_CROSS_TOOLS=0 skips this step.
set -uo pipefail
tools=(aarch64-linux-gnu-gcc qemu-aarch64 x86_64-w64-mingw32-gcc)
have_wine() { command -v wine64 >/dev/null || command -v wine >/dev/null || [ -x /usr/lib/wine/wine64 ]; }
missing=()
for t in "${tools[@]}"; do command -v "$t" >/dev/null || missing+=("$t"); done
have_wine || missing+=(wine64)
if [ ${#missing[@]} -eq 0 ] || [ "${SPECLENS_CROSS_TOOLS:-1}" = 0 ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "cross_tools: installing ${missing[*]} (arm64 gcc, qemu-user, mingw-w64, wine64)" >&2
    export DEBIAN_FRONTEND=noninteractive
    start=$(date +%s)
    if apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu \
        libc6-dev-arm64-cross qemu-user gcc-mingw-w64-x86-64 wine64 >/dev/null; then
        echo "cross_tools: installed in $(($(date +%s) - start)) s" >&2
        exit 0
    fi
    echo "cross_tools: apt-get failed; tests/native/test_cross.py skips the platforms it lacks" >&2
else
    echo "cross_tools: ${missing[*]} missing and not root with apt-get: tests/native/test_cross.py skips" \
         "those platforms (install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user gcc-mingw-w64-x86-64 wine64)" >&2
fi
exit 0
