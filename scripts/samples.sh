#!/usr/bin/env bash
# README command 1: install what is missing, build the library, the CLI and
# the samples (no tests, no benchmarks) in build/, and run every sample,
# showing what it prints: the errors errshim explains and the fixes it makes.
# Each sample's command and the line that says it behaved come from CTest
# (samples/CMakeLists.txt), the one place they are written.
#
#   scripts/samples.sh [--no-torch]     --no-torch: skip libtorch and its sample
# Environment: ERRSHIM_BUILD_DIR (build), JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."

torch=1
for arg in "$@"; do
  case "$arg" in
    --no-torch) torch=0 ;;
    *) echo "samples.sh: unknown option '$arg' (try --no-torch)" >&2; exit 2 ;;
  esac
done

build=${ERRSHIM_BUILD_DIR:-build}
if ((torch)); then scripts/setup.sh --with-torch; else scripts/setup.sh; fi

configure=(-DERRSHIM_BUILD_TESTS=OFF -DERRSHIM_BUILD_BENCH=OFF)
((torch)) || configure+=(-DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON)
mkdir -p "$build"
cmake -S . -B "$build" "${configure[@]}" >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 2; }
echo "samples.sh: building the library, the CLI and the samples in $build/ (a few minutes on 2 cores)"
cmake --build "$build" -j"${JOBS:-2}" >"$build/build.log" 2>&1 || { tail -n 40 "$build/build.log"; exit 2; }

# The samples as CTest knows them: name, command, pass regex, as JSON.
ctest --test-dir "$build" -L sample --show-only=json-v1 >"$build/samples.json"
exec python3 - "$build/samples.json" <<'EOF'
import json, re, subprocess, sys

tests = json.load(open(sys.argv[1]))["tests"]
passed = failed = 0
for t in tests:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    regexes = props.get("PASS_REGULAR_EXPRESSION", [])
    print(f"\n=== {t['name']}: {' '.join(t['command'])}\n", flush=True)
    run = subprocess.run(t["command"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, errors="replace", timeout=600)
    print(run.stdout, end="" if run.stdout.endswith("\n") else "\n")
    # CTest's rule: with a pass regex, the output decides; without, the exit code.
    ok = any(re.search(r, run.stdout) for r in regexes) if regexes else run.returncode == 0
    print(f"--- {t['name']}: {'passed' if ok else 'FAILED (exit %d)' % run.returncode}")
    passed += ok
    failed += not ok
print(f"\nsamples: {passed} passed, {failed} failed")
sys.exit(1 if failed or not tests else 0)
EOF
