#!/usr/bin/env bash
# Formats the tree's C and C++ sources with .clang-format, or with --check
# lists the files that are not formatted and fails. Needs clang-format-14
# (Debian 12's; another version formats differently).
#   scripts/format.sh [--check] [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [[ ${1:-} == --check ]]; then check=1; shift; fi
tool=$(command -v clang-format-14 || true)
if [[ -z $tool ]]; then
  echo "format.sh: clang-format-14 not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
if (($#)); then
  files=("$@")
else
  # Every source but test inputs, fuzz corpora and the extractor's upstream
  # fixtures (data, not code; their line numbers are pinned), and
  # build trees when this is not a git checkout.
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.c' '*.cc' '*.cpp' '*.h' '*.hpp' ':!:tests/data/**' ':!:fuzz/corpus/**' \
      ':!:tools/extract/tests/fixtures/**')
  else
    mapfile -t files < <(find bench cmake examples fuzz include python samples src tests tools \
      \( -path tests/data -o -path fuzz/corpus -o -path tools/extract/tests/fixtures -o -name 'build*' \) -prune -o \
      -type f \( -name '*.c' -o -name '*.cc' -o -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \) -print | sort)
  fi
fi
if ((check == 0)); then
  "$tool" -i "${files[@]}"
  exit 0
fi
# One clang-format for every file (a process each costs more than the check).
report=$("$tool" --dry-run -Werror "${files[@]}" 2>&1) && exit 0
unformatted=$(grep -o '^[^: ]*:[0-9]*:[0-9]*: error' <<<"$report" | cut -d: -f1 | sort -u || true)
if [[ -z $unformatted ]]; then
  echo "$report" >&2  # clang-format failed for another reason
  exit 1
fi
while read -r f; do
  echo "$f: not formatted; scripts/format.sh $f formats it (clang-format-14, .clang-format)" >&2
done <<<"$unformatted"
exit 1
