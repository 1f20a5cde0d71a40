#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan+UBSan) in build-fuzz and runs
# each for SECONDS (default 60), one after the other (smoke runs two at a time).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: catalog template match import config_fix snapshot
#   scripts/fuzz.sh smoke [TARGET...]         what CI runs: about a minute per target,
#                                             repeatable (fixed seed and run count, seeds only)
#
# Seeds come from fuzz/corpus/<target>/ (read only); what a run learns goes to
# build-fuzz/corpus/<target>/ and is reused by the next run. A crash, leak or
# hang (-timeout=2) is written to fuzz/findings/<target>/; copy it into
# tests/data/fuzz-regressions/<target>/ once fixed so the suite replays it.
# Exit status: 0 when no target found anything, 1 otherwise, 2 on bad usage.
# Environment: FUZZ_BUILD (build dir), FUZZ_JOBS (build parallelism, 2),
# FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD:-$root/build-fuzz}
all=(catalog template match import config_fix snapshot)

seconds=60
smoke=0
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = smoke ]; then smoke=1; shift; fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "fuzz.sh: unknown target '$t' (one of: ${all[*]})" >&2; exit 2; }
done
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found; run scripts/setup.sh --with-fuzz" >&2; exit 2; }

# Inputs never need to be larger than what each target reads in practice.
declare -A max_len=([catalog]=65536 [template]=4096 [match]=262144 [import]=65536 [config_fix]=16384 [snapshot]=65536)
# Smoke runs: a fixed number of inputs (about a minute each on 2 cores) from
# the seeds alone with a fixed seed, so a CI finding reproduces exactly with
# `scripts/fuzz.sh smoke TARGET`; time-bounded runs depend on machine speed.
declare -A smoke_runs=([catalog]=2500 [template]=100000 [match]=150000 [import]=15000 [config_fix]=60000 [snapshot]=30000)

cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DERRSHIM_FUZZ=ON -DERRSHIM_BUILD_TESTS=OFF -DERRSHIM_BUILD_SAMPLES=OFF -DERRSHIM_BUILD_TOOLS=OFF \
  -DERRSHIM_BUILD_BENCH=OFF >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j"${FUZZ_JOBS:-2}" --target "${build_targets[@]}"

mkdir -p "$build/logs"
# One target; its report goes to stdout, its exit status says whether it found anything.
run_target() {
  local t=$1 work findings log ok cpu execs start_cpu me=$BASHPID  # (a subshell when run in the background)
  local limit=(-max_total_time="$seconds")
  work="$build/corpus/$t"
  if [ $smoke = 1 ]; then
    work="$build/smoke-corpus/$t"
    rm -rf "$work"
    limit=(-runs="${smoke_runs[$t]}" -seed=1)
  fi
  findings="$root/fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  log="$build/logs/$t.log"
  [ $smoke = 1 ] && log="$build/logs/smoke-$t.log"
  echo "fuzz.sh: $t for ${limit[*]} (log: $log)"
  # -max_total_time is wall time; the CPU time the fuzzer got is reported
  # too, since the machine may be shared.
  start_cpu=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$me/stat")
  # shellcheck disable=SC2086  # FUZZ_ARGS is a list of flags
  if "$build/fuzz/fuzz_$t" "${limit[@]}" -timeout=2 -rss_limit_mb=2048 -max_len="${max_len[$t]}" \
       -print_final_stats=1 -artifact_prefix="$findings/" ${FUZZ_ARGS:-} "$work" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    ok=1
  else
    ok=0
  fi
  cpu=$(awk -v s="$start_cpu" -v hz="$(getconf CLK_TCK)" '{printf "%.0f", ($14 + $15 + $16 + $17 - s) / hz}' "/proc/$me/stat")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "  $t: ${cpu}s CPU, ${execs:-?} inputs run"
  if [ $ok = 0 ]; then
    echo "fuzz.sh: $t found a problem; the input is in $findings/:" >&2
    grep -E 'ERROR|errshim fuzz|SUMMARY|Test unit written' "$log" | head -5 >&2 || true
    return 1
  fi
}

status=0
if [ $smoke = 1 ]; then
  # A smoke run is a fixed run count from a fixed seed, so targets can share
  # the cores without changing what each one runs: FUZZ_PARALLEL at a time
  # (default 2), their reports shown in target order.
  parallel=${FUZZ_PARALLEL:-2}
  for i in "${!targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
    report="$build/logs/report-$i"
    rm -f "$report.ok"
    { run_target "${targets[$i]}" >"$report.txt" 2>&1 && touch "$report.ok"; } &
  done
  wait
  for i in "${!targets[@]}"; do
    cat "$build/logs/report-$i.txt"
    [ -e "$build/logs/report-$i.ok" ] || status=1
  done
else
  for t in "${targets[@]}"; do run_target "$t" || status=1; done
fi
exit $status
