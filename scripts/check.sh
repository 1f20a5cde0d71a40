#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this, and README shows
# it): install what is missing, build with warnings as errors, run every test;
# then the C++ suite again under AddressSanitizer + UndefinedBehaviorSanitizer,
# and each fuzz target for about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh --with-torch --with-fuzz
cmake -S . -B build -DERRSHIM_WERROR=ON
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2

# The C++ suite (unit, cli, sample, torch) under ASan + UBSan; see the
# script for why the package, Python and Rust tests are left out.
scripts/sanitize.sh asan

# Each fuzz target for about a minute: a fixed seed and run count from the
# seed corpus, so a finding here reproduces with `scripts/fuzz.sh smoke`.
scripts/fuzz.sh smoke
