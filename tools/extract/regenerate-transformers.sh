#!/bin/sh
# Regenerates patterns/generated/transformers.yaml from transformers' key files
# (generation, cache, loading, attention, the most used model files) at one
# commit per release 4.30 .. 4.57 and a 5.0.0.dev0 commit of main, as
# tools/extract/transformers-files.txt lists them with their sha256. The files
# are read from a clone of huggingface/transformers (`git show COMMIT:PATH`,
# nothing is checked out) or from a cache folder CACHE/<commit>/<path>
# (default /var/cache/errshim/transformers, filled by
# `transformers_layer.py fill`); a file whose sha256 differs stops the run. No
# transformers code is copied, only facts. Messages a hand-written entry in
# patterns/*.yaml covers (same text or same site) are left out; `errshim lint`
# settles the remaining overlaps, so an errshim binary is needed (default
# build/tools/errshim).
#
#   tools/extract/regenerate-transformers.sh [--git CLONE | --cache DIR] [ERRSHIM]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
from="--cache /var/cache/errshim/transformers"
case "${1:-}" in
  --git|--cache)
    [ $# -ge 2 ] || { echo "usage: $0 [--git CLONE | --cache DIR] [ERRSHIM]" >&2; exit 2; }
    from="$1 $2"; shift 2 ;;
esac
errshim=${1:-$top/build/tools/errshim}
[ -x "$errshim" ] || { echo "$0: no errshim binary at $errshim (build errshim_cli or pass its path)" >&2; exit 2; }
out=$top/patterns/generated
mkdir -p "$out"
# Every hand-written file: their entries win the sites and texts they pin.
set --
for f in "$top"/patterns/*.yaml; do set -- "$@" --curated "$f"; done
# The other libraries' generated layers: a text one of them has stays there.
for f in "$out"/*.yaml; do
  [ "$(basename "$f")" = transformers.yaml ] || set -- "$@" --other-layer "$f"
done
# shellcheck disable=SC2086 # $from is two words
python3 "$here/transformers_layer.py" build $from "$@" --errshim "$errshim" \
  --stats "$out/transformers.stats.json" > "$out/transformers.yaml.tmp"
mv "$out/transformers.yaml.tmp" "$out/transformers.yaml"
"$errshim" lint "$top/patterns/" "$out/transformers.yaml"
