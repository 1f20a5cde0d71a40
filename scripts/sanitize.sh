#!/usr/bin/env bash
# Builds errshim with its whole test suite under sanitizers and runs it.
#
#   scripts/sanitize.sh asan [CTEST_ARGS...]   AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan
#   scripts/sanitize.sh tsan [CTEST_ARGS...]   ThreadSanitizer, in build-tsan
#
# Without CTEST_ARGS it runs the suite as CI does: the unit tests in one
# process (under a sanitizer, starting a process and building the catalog for
# each of 400-odd tests costs most of the time), then the cli, sample, torch
# and bindings tests through ctest. The package, Python and Rust tests are
# left out: they check installation and foreign hosts (an interpreter, a
# toolchain) that are not built with the sanitizers, not errshim's memory.
# With CTEST_ARGS, only `ctest CTEST_ARGS` runs.
#
# Any report fails the run (halt_on_error; UBSan does not recover). A huge
# allocation returns null as it does without a sanitizer
# (allocator_may_return_null), since tests provoke libtorch's out-of-memory
# error on purpose. Warnings are not errors here: instrumentation makes gcc 12
# warn falsely (-Wmaybe-uninitialized in <functional>); the plain build keeps
# -Werror. Example: `scripts/sanitize.sh tsan -R Stress`.
# The compiler is clang++ when the machine has it (scripts/setup.sh
# --with-fuzz installs it with its sanitizer runtimes): it compiles the
# instrumented tree in less than half gcc's time.
# Environment: SANITIZE_JOBS (build parallelism, 2), SANITIZE_CXX (compiler).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-}
[ $# -gt 0 ] && shift
case "$kind" in
  asan)
    build=${SANITIZE_BUILD:-$root/build-asan}
    sanitizers="address,undefined"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:allocator_may_return_null=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
    ;;
  tsan)
    build=${SANITIZE_BUILD:-$root/build-tsan}
    sanitizers="thread"
    export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:allocator_may_return_null=1:suppressions=$root/scripts/tsan.supp}
    ;;
  *) echo "usage: scripts/sanitize.sh asan|tsan [CTEST_ARGS...]" >&2; exit 2 ;;
esac

cxx=${SANITIZE_CXX:-}
if [ -z "$cxx" ]; then
  cxx=g++
  command -v clang++ >/dev/null && cxx=clang++
fi
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DERRSHIM_SANITIZE="$sanitizers" \
  -DERRSHIM_WERROR=OFF -DERRSHIM_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"${SANITIZE_JOBS:-2}"

# ThreadSanitizer needs the address layout it was built for; kernels with
# large mmap randomisation break it, so run without ASLR where possible.
prefix=()
if [ "$kind" = tsan ] && command -v setarch >/dev/null && setarch "$(uname -m)" -R true 2>/dev/null; then
  prefix=(setarch "$(uname -m)" -R)
fi
if [ $# -gt 0 ]; then
  "${prefix[@]}" ctest --test-dir "$build" --output-on-failure -j2 "$@"
else
  # The unit tests read their data relative to the tests directory, as ctest runs them.
  (cd "$build/tests" && "${prefix[@]}" ./errshim_tests --gtest_brief=1)
  # `slow`: torch's errors provoked through Python, checked by CI's first build.
  "${prefix[@]}" ctest --test-dir "$build" --output-on-failure -j2 -LE 'unit|package|python|rust|slow'
fi
