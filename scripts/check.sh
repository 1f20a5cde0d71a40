#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this, and README shows
# it). Builds 1-3 have warnings as errors; every build has its own folder, so build/
# (README command 1, or yours) is never reconfigured or rebuilt here.
#
#   1. build-check/          what a fresh machine gets from the set-up line
#                            below (libtorch, no benchmark comparator), CI's
#                            build type; every test.
#   2. build-check-minimal/  no optional package at all (no libtorch, Google
#                            Benchmark, Hyperscan, RE2, Python, rustc): each
#                            must only skip its own part; every test left
#                            but the package tests (step 1 ran them).
#   3. build-check-release/  Release with every optional comparator
#                            (Hyperscan, RE2): the build users and packagers
#                            make; unit tests and a short benchmark run.
#   4. the C++ suite under ASan + UBSan (scripts/sanitize.sh asan).
#   5. each fuzz target for about a minute (scripts/fuzz.sh smoke).
#
# A machine that had optional packages installed by hand still builds 1 and
# 2 without them: they are switched off with CMAKE_DISABLE_FIND_PACKAGE_*.
#
# Disk: CI machines can be short of it (one run failed with ENOSPC in step
# 1). Debug info is written compressed (-gz, added to CXXFLAGS, which every
# build here starts from), and a step that passed removes its build folder
# before the next begins, so the steps never hold their folders all at once
# (ccache keeps what they compiled; build-fuzz holds the fuzz corpus and stays).
# Environment: CHECK_JOBS (2); CHECK_ONLY=1,2,... to run some steps only;
# CHECK_KEEP=1 keeps every build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${CHECK_JOBS:-2}
only=",${CHECK_ONLY:-1,2,3,4,5},"

step() { [[ $only == *",$1,"* ]]; }
done_with() { [[ ${CHECK_KEEP:-0} == 1 ]] || rm -rf "$@"; }
export CXXFLAGS="${CXXFLAGS:+$CXXFLAGS }-gz"
banner() { printf '\n==== check %s\n' "$*"; }
# Builds 1 and 2 have the same compiler and flags, in sibling folders: with
# paths taken relative to the checkout and the build folder left out of the
# hash, ccache gives the second the objects the first compiled (debug info
# then names the first one's folder, which no test reads).
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
configure() {  # configure DIR ARGS...: with ccache when the machine has it
  local dir=$1; shift
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  cmake -S . -B "$dir" -DERRSHIM_WERROR=ON "${launcher[@]}" "$@"
}

# --with-python: the wheel, venv, torch and Prometheus tests of the Python
# package; --with-ci: ccache (above).
scripts/setup.sh --with-torch --with-python --with-fuzz --with-server --with-ci

if step 1; then
  banner "1/5: fresh-machine configuration (RelWithDebInfo, no comparators)"
  configure build-check -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_DISABLE_FIND_PACKAGE_Hyperscan=ON -DCMAKE_DISABLE_FIND_PACKAGE_RE2=ON
  cmake --build build-check -j"$jobs"
  ctest --test-dir build-check --output-on-failure -j"$jobs"
  done_with build-check
fi

if step 2; then
  banner "2/5: no optional package (RelWithDebInfo)"
  # (Hyperscan and RE2 are named although bench/ is skipped without Google
  # Benchmark: so the step stays minimal if that ever changes.)
  configure build-check-minimal --no-warn-unused-cli -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_Hyperscan=ON -DCMAKE_DISABLE_FIND_PACKAGE_RE2=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON -DCMAKE_DISABLE_FIND_PACKAGE_Rustc=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_prometheus-cpp=ON -DCMAKE_DISABLE_FIND_PACKAGE_httplib=ON
  cmake --build build-check-minimal -j"$jobs"
  # The package tests install and rebuild the library, and the `slow` one
  # provokes torch's errors through Python: step 1 ran them.
  ctest --test-dir build-check-minimal --output-on-failure -j"$jobs" -LE 'package|slow'
  done_with build-check-minimal
fi

if step 3; then
  banner "3/5: Release, every optional comparator"
  scripts/setup.sh --with-bench
  configure build-check-release -DCMAKE_BUILD_TYPE=Release
  cmake --build build-check-release -j"$jobs"
  ctest --test-dir build-check-release --output-on-failure -j"$jobs" -L unit
  # The comparators run, not only compile: one short row each (Google
  # Benchmark prints nothing and exits 0 when a filter matches no row, and
  # a row that fails still exits 0).
  rows=$(build-check-release/bench/errshim_bench --quick --sizes=100 \
    --benchmark_filter='^latency/(errshim|hyperscan|re2set)/100/short/hit' 2>&1) || { echo "$rows"; exit 1; }
  echo "$rows"
  for impl in errshim hyperscan re2set; do
    grep -q "^latency/$impl/100/short/hit" <<<"$rows" || { echo "check: no $impl benchmark row ran" >&2; exit 1; }
  done
  # A comparator that cannot read the catalog's regexes reports an error in its row.
  if grep -q "ERROR OCCURRED" <<<"$rows"; then echo "check: a benchmark row failed" >&2; exit 1; fi
  done_with build-check-release
fi

if step 4; then
  banner "4/5: ASan + UBSan"
  # The C++ suite (unit, cli, sample, torch) under ASan + UBSan; see the
  # script for why the package, Python and Rust tests are left out.
  scripts/sanitize.sh asan
  done_with "${SANITIZE_BUILD:-build-asan}"
fi

if step 5; then
  banner "5/5: fuzz smoke"
  # A fixed seed and run count from the seed corpus, so a finding here
  # reproduces with `scripts/fuzz.sh smoke`.
  scripts/fuzz.sh smoke
fi
