#!/usr/bin/env bash
# Builds errshim with its whole test suite under sanitizers and runs it.
#
#   scripts/sanitize.sh asan [CTEST_ARGS...]   AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan
#   scripts/sanitize.sh tsan [CTEST_ARGS...]   ThreadSanitizer, in build-tsan
#
# Any report fails the run (halt_on_error; UBSan does not recover). A huge
# allocation returns null as it does without a sanitizer
# (allocator_may_return_null), since tests provoke libtorch's out-of-memory
# error on purpose. Warnings are not errors here: instrumentation makes gcc 12
# warn falsely (-Wmaybe-uninitialized in <functional>); the plain build keeps
# -Werror. Extra arguments go to ctest, e.g. `scripts/sanitize.sh tsan -R Stress`.
# Environment: SANITIZE_JOBS (build parallelism, 2).
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

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DERRSHIM_SANITIZE="$sanitizers" \
  -DERRSHIM_WERROR=OFF -DERRSHIM_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"${SANITIZE_JOBS:-2}"

run=(ctest --test-dir "$build" --output-on-failure -j2 "$@")
# ThreadSanitizer needs the address layout it was built for; kernels with
# large mmap randomisation break it, so run without ASLR where possible.
if [ "$kind" = tsan ] && command -v setarch >/dev/null && setarch "$(uname -m)" -R true 2>/dev/null; then
  run=(setarch "$(uname -m)" -R "${run[@]}")
fi
"${run[@]}"
