#!/bin/sh
# Regenerates patterns/generated/torch-cpp.yaml, torch-cpp-csrc.yaml and
# torch-python.yaml from the installed torch 1.13.1: Debian's source package
# (scripts/fetch-torch-source.sh fetches it into a cache outside the
# repository), the libtorch-dev headers (/usr/include) and python3-torch's
# .py files. No torch code is copied, only facts. Messages a hand-written
# entry in patterns/*.yaml covers (same text or same site) are left out;
# `errshim lint` settles the remaining overlaps, so an errshim binary is
# needed (default build/tools/errshim).
#
#   tools/extract/regenerate-torch.sh [TORCH_SOURCE_DIR] [ERRSHIM]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
src=${1:-}
if [ -z "$src" ]; then
  src=$("$top/scripts/fetch-torch-source.sh")
fi
errshim=${2:-$top/build/tools/errshim}
[ -x "$errshim" ] || { echo "$0: no errshim binary at $errshim (build errshim_cli or pass its path)" >&2; exit 2; }
[ -f "$src/c10/util/Exception.h" ] || { echo "$0: $src is not a pytorch source tree" >&2; exit 2; }
py_root=$(/usr/bin/python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')
# tag v1.13.1, the tree Debian's 1.13.1+dfsg tarball repacks
commit=49444c3e546bf240bed24a101e747422d1f8a0ee
out=$top/patterns/generated
mkdir -p "$out"
# Every hand-written file: their entries win the sites and texts they pin.
set --
for f in "$top"/patterns/*.yaml; do set -- "$@" --curated "$f"; done
set -- "$@" \
       --errshim "$errshim" --repo pytorch/pytorch --commit "$commit" --version 1.13.1 \
       --regen tools/extract/regenerate-torch.sh
# ATen, c10 and the loader (caffe2/serialize), with the installed headers
# (a header the source tree lacks is generated: torch prints it under build/)
python3 "$here/errshim_extract.py" extract --lang cpp --root "$src" --library libtorch \
  --include 'aten/src/ATen/*' --include 'c10/*' --include 'caffe2/serialize/*' \
  --exclude '*/test/*' --exclude '*/benchmarks/*' --exclude 'aten/src/ATen/native/quantized/cpu/qnnpack/*' \
  --extra-root /usr/include/ATen=aten/src/ATen,build/aten/src/ATen --extra-root /usr/include/c10=c10 \
  --extra-root /usr/include/caffe2/serialize=caffe2/serialize \
  --stats "$out/torch-cpp.stats.json" "$@" > "$out/torch-cpp.yaml.tmp"
# torch/csrc (autograd, jit, the C++ API, python bindings): a file of its
# own, as one file may hold at most 16 MiB
python3 "$here/errshim_extract.py" extract --lang cpp --root "$src" --library libtorch \
  --include 'torch/csrc/*' --exclude '*/test/*' --exclude 'torch/csrc/deploy/*' \
  --extra-root /usr/include/torch=torch \
  --stats "$out/torch-cpp-csrc.stats.json" "$@" > "$out/torch-cpp-csrc.yaml.tmp"
python3 "$here/errshim_extract.py" extract --lang python --root "$py_root" --library torch \
  --include 'torch/*' --exclude 'torch/testing/*' --exclude 'torch/utils/benchmark/*' \
  --stats "$out/torch-python.stats.json" "$@" > "$out/torch-python.yaml.tmp"
# one entry per text across the three: the Python layer first (what most
# users run), then ATen/c10, then torch/csrc
python3 "$here/errshim_extract.py" fold "$out/torch-python.yaml.tmp" "$out/torch-cpp.yaml.tmp" \
  "$out/torch-cpp-csrc.yaml.tmp"
for f in torch-cpp torch-cpp-csrc torch-python; do mv "$out/$f.yaml.tmp" "$out/$f.yaml"; done
# entries of two layers that lint finds claiming each other's texts (the same
# text with differently typed values) are folded the same way; a slow run
# (every example against every entry)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$errshim" lint "$top/patterns/" "$out/" > "$log" 2>&1; then
  python3 "$here/errshim_extract.py" fold --lint-log "$log" "$out/torch-python.yaml" "$out/torch-cpp.yaml" \
    "$out/torch-cpp-csrc.yaml"
  "$errshim" lint "$top/patterns/" "$out/"
fi
