#!/usr/bin/env bash
# llama.cpp's own benchmark binaries (llama-bench, llama-speculative-simple) from the llama.cpp source vendored
# in llama-cpp-python's sdist, for `speclens bench --pair` (app/bench/llama_cpp_cli.py; docs/real-pair.md).
#
#   packaging/build_llama_cpp.sh [llama-cpp-python version]     # default 0.3.36
#
# Builds into ~/.cache/speclens/llama.cpp/<version>/ (SPECLENS_LLAMA_CPP_DIR overrides the parent folder):
# src/ (the unpacked sdist), build/, bin/ (the two binaries, static) and build-info.txt (version, commit, flags,
# build seconds). Idempotent: with both binaries and build-info.txt present it prints the folder and does
# nothing. PYTHON picks the interpreter whose pip downloads the sdist (default python3).
#
# Flags: AVX-512 (+VNNI), AVX2, FMA, F16C, no native tuning and no AMX: AMX kernels die with SIGILL on the
# 2-core VMs the benchmark runs on. JOBS (default 2) sets the build's parallelism; it runs under nice -n 19.
set -euo pipefail

VERSION="${1:-0.3.36}"
ROOT="${SPECLENS_LLAMA_CPP_DIR:-$HOME/.cache/speclens/llama.cpp}/$VERSION"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-2}"
TARGETS=(llama-bench llama-speculative-simple)
FLAGS=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
       -DGGML_NATIVE=OFF -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
       -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)

done_already=1
for t in "${TARGETS[@]}"; do [[ -x "$ROOT/bin/$t" ]] || done_already=0; done
[[ -f "$ROOT/build-info.txt" ]] || done_already=0
if [[ $done_already == 1 ]]; then
    echo "$ROOT"
    exit 0
fi

mkdir -p "$ROOT/src" "$ROOT/bin"
SDIST="$ROOT/src/llama_cpp_python-$VERSION.tar.gz"
if [[ ! -f "$SDIST" ]]; then
    echo "downloading llama-cpp-python $VERSION's sdist" >&2
    "$PYTHON" -m pip download --no-binary :all: --no-deps "llama-cpp-python==$VERSION" -d "$ROOT/src" >&2
fi
LLAMA="$ROOT/src/llama_cpp_python-$VERSION/vendor/llama.cpp"
[[ -d "$LLAMA" ]] || tar -xzf "$SDIST" -C "$ROOT/src"

start=$(date +%s)
echo "building ${TARGETS[*]} from $LLAMA (about 5 minutes on 2 cores)" >&2
nice -n 19 cmake -S "$LLAMA" -B "$ROOT/build" "${FLAGS[@]}" >&2
nice -n 19 cmake --build "$ROOT/build" --config Release -j "$JOBS" --target "${TARGETS[@]}" >&2
for t in "${TARGETS[@]}"; do cp "$ROOT/build/bin/$t" "$ROOT/bin/$t"; done
seconds=$(( $(date +%s) - start ))

commit=$(sed -n 's/.*LLAMA_COMMIT = "\([^"]*\)".*/\1/p' "$(find "$ROOT/build" -name build-info.cpp | head -1)" 2>/dev/null)
{
    echo "llama-cpp-python $VERSION (vendor/llama.cpp)"
    echo "commit: ${commit:-unknown}"
    echo "flags: ${FLAGS[*]}"
    echo "targets: ${TARGETS[*]}"
    echo "build seconds: $seconds (-j $JOBS, nice -n 19)"
    echo "compiler: $(c++ --version | head -1)"
} > "$ROOT/build-info.txt"
echo "$ROOT"
