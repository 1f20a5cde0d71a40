#!/usr/bin/env bash
# Installs the Debian 12 packages errshim needs, only those missing, so a
# second run costs nothing.
# Usage: scripts/setup.sh [--with-torch] [--with-python] [--with-fuzz] [--with-bench] [--with-server] [--with-ci]
#   --with-torch  libtorch, for the samples and tests on a real inference layer
#   --with-python the Python wheel's build and venv test, its torch and Prometheus tests
#   --with-fuzz   clang and libFuzzer's runtime, for scripts/fuzz.sh and sanitizers
#   --with-bench  Hyperscan, RE2 and ripgrep, the benchmarks' comparators
#   --with-server prometheus-cpp, cpp-httplib, Prometheus and rsyslog: the server sample and its tests
#   --with-ci     ccache, so scripts/check.sh's builds share their common objects; clang-format-14 for the format check
set -euo pipefail

packages=(g++ cmake make pkg-config
          libboost-regex-dev libfmt-dev libyaml-cpp-dev nlohmann-json3-dev
          libgtest-dev googletest libbenchmark-dev libcli11-dev python3)
for arg in "$@"; do
  case "$arg" in
    --with-torch) packages+=(libtorch-dev) ;;
    --with-python) packages+=(python3-venv python3-setuptools python3-wheel python3-torch python3-prometheus-client) ;;
    --with-fuzz)  packages+=(clang libclang-rt-14-dev) ;;
    --with-bench) packages+=(libhyperscan-dev libre2-dev ripgrep) ;;
    --with-server) packages+=(prometheus-cpp-dev libcpp-httplib-dev prometheus rsyslog) ;;
    --with-ci)    packages+=(ccache clang-format-14) ;;
    *) echo "setup.sh: unknown option '$arg' (try --with-torch, --with-python, --with-fuzz, --with-bench, --with-server, --with-ci)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
