#!/bin/sh
# Regenerates patterns/generated/candle.yaml from a clone of huggingface/candle:
# every release tag and HEAD, read with git (nothing is checked out, no candle
# code is copied). Messages a hand-written entry in patterns/*.yaml already
# covers are left out; `errshim lint` settles the remaining overlaps, so an
# errshim binary is needed (default build/tools/errshim).
#
#   tools/extract/regenerate-candle.sh CANDLE_GIT_DIR [ERRSHIM]
set -eu
if [ $# -lt 1 ]; then
  echo "usage: $0 CANDLE_GIT_DIR [ERRSHIM]" >&2
  exit 2
fi
git_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
errshim=${2:-$top/build/tools/errshim}
[ -d "$git_dir/objects" ] || git_dir=$git_dir/.git
[ -x "$errshim" ] || { echo "$0: no errshim binary at $errshim (build errshim_cli or pass its path)" >&2; exit 2; }
mkdir -p "$top/patterns/generated"
out=$top/patterns/generated/candle.yaml
python3 "$here/errshim_extract.py" git --lang rust --git-dir "$git_dir" --repo huggingface/candle \
  --include 'candle-core/src/*' --include 'candle-nn/src/*' --include 'candle-transformers/src/*' \
  --include 'candle-metal-kernels/src/*' \
  --curated "$top/patterns/candle.yaml" --curated "$top/patterns/transformers.yaml" \
  --curated "$top/patterns/libtorch.yaml" \
  --errshim "$errshim" --stats "$top/patterns/generated/candle.stats.json" > "$out.tmp"
mv "$out.tmp" "$out"
"$errshim" lint "$top/patterns/" "$top/patterns/generated/"
