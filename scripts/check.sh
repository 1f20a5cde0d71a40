#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this, and README shows
# it): install what is missing, build with warnings as errors, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --with-torch
cmake -S . -B build -DERRSHIM_WERROR=ON
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2
