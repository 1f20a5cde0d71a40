#!/usr/bin/env bash
# Installs the Debian 12 packages errshim needs, only those missing, so a
# second run costs nothing. Usage: scripts/setup.sh [--with-torch] [--with-fuzz]
set -euo pipefail

packages=(g++ cmake make pkg-config
          libboost-regex-dev libfmt-dev libyaml-cpp-dev
          libgtest-dev googletest libbenchmark-dev python3)
for arg in "$@"; do
  case "$arg" in
    --with-torch) packages+=(libtorch-dev) ;;
    --with-fuzz)  packages+=(clang libclang-rt-14-dev) ;;
    --with-bench) packages+=(libhyperscan-dev libre2-dev) ;;
    *) echo "setup.sh: unknown option '$arg' (try --with-torch, --with-fuzz, --with-bench)" >&2; exit 2 ;;
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
