#!/bin/sh
# Fetches Debian's source package of the installed pytorch (python3-torch /
# libtorch-dev) into a cache directory outside the repository, for the C++
# extractor (tools/extract/regenerate-torch.sh). Idempotent: a tree already
# unpacked for the installed version is left as it is.
#
#   scripts/fetch-torch-source.sh [CACHE_DIR]      prints the unpacked tree's path
#
# CACHE_DIR defaults to $ERRSHIM_CACHE, else $XDG_CACHE_HOME/errshim, else
# ~/.cache/errshim. The deb-src line is written to a private apt
# configuration in CACHE_DIR (the system's sources are not changed) and names
# only the Debian archives the machine's own sources use (deb.debian.org,
# security.debian.org, ...); no other repository is asked.
set -eu

cache=${1:-${ERRSHIM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/errshim}}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

version=$(dpkg-query -W -f='${source:Version}' python3-torch 2>/dev/null ||
          dpkg-query -W -f='${source:Version}' libtorch-dev 2>/dev/null || true)
if [ -z "$version" ]; then
  echo "$0: neither python3-torch nor libtorch-dev is installed; nothing to match the source to" >&2
  exit 2
fi
upstream=${version#*:}
upstream=${upstream%-*}
tree=$cache/pytorch-$upstream
stamp=$tree/.errshim-source-version
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$version" ]; then
  echo "$tree"
  exit 0
fi

apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/sources.list.d"
sources=$apt_dir/sources.list.d/debian-src.sources
: > "$sources.tmp"

# The machine's Debian entries, deb822 (*.sources) and one-line (*.list)
# forms; only URIs on a Debian archive host are kept.
is_debian_uri() {
  case $1 in
    http://deb.debian.org/*|https://deb.debian.org/*|http://security.debian.org/*|https://security.debian.org/*|\
    http://ftp.debian.org/*|https://ftp.debian.org/*|http://snapshot.debian.org/*|https://snapshot.debian.org/*|\
    http://ftp.*.debian.org/*|https://ftp.*.debian.org/*) return 0 ;;
  esac
  return 1
}

for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  # one stanza per blank-line separated block; print "URI|suites|components|signed-by"
  awk 'BEGIN { RS = ""; FS = "\n" }
       { uris = ""; suites = ""; comps = ""; key = ""; types = ""; enabled = "yes"
         for (i = 1; i <= NF; i++) {
           line = $i; sub(/#.*/, "", line)
           if (line ~ /^Types:/)      { sub(/^Types:[ \t]*/, "", line); types = line }
           if (line ~ /^URIs:/)       { sub(/^URIs:[ \t]*/, "", line); uris = line }
           if (line ~ /^Suites:/)     { sub(/^Suites:[ \t]*/, "", line); suites = line }
           if (line ~ /^Components:/) { sub(/^Components:[ \t]*/, "", line); comps = line }
           if (line ~ /^Signed-By:/)  { sub(/^Signed-By:[ \t]*/, "", line); key = line }
           if (line ~ /^Enabled:/)    { sub(/^Enabled:[ \t]*/, "", line); enabled = line }
         }
         if (types ~ /deb/ && enabled != "no" && uris != "") {
           n = split(uris, u, /[ \t]+/)
           for (j = 1; j <= n; j++) if (u[j] != "") print u[j] "|" suites "|" comps "|" key
         } }' "$f"
done > "$apt_dir/found"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  sed -e 's/#.*//' "$f" | awk '$1 == "deb" || $1 == "deb-src" {
      i = 2; key = ""
      if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) { if ($i ~ /signed-by=/) key = $i; i++ }
                        if ($i ~ /signed-by=/) key = $i; i++ }
      sub(/.*signed-by=/, "", key); sub(/\]$/, "", key)
      comps = ""; for (k = i + 2; k <= NF; k++) comps = comps (comps == "" ? "" : " ") $k
      print $i "|" $(i + 1) "|" comps "|" key }'
done >> "$apt_dir/found"

sort -u "$apt_dir/found" | while IFS='|' read -r uri suites comps key; do
  is_debian_uri "$uri" || continue
  {
    echo "Types: deb-src"
    echo "URIs: $uri"
    echo "Suites: $suites"
    echo "Components: $comps"
    [ -n "$key" ] && echo "Signed-By: $key"
    echo
  } >> "$sources.tmp"
done
if [ ! -s "$sources.tmp" ]; then
  rm -f "$sources.tmp"
  echo "$0: no Debian archive in /etc/apt/sources.list(.d); cannot name a deb-src line" >&2
  exit 2
fi
mv "$sources.tmp" "$sources"

# A private apt: its own source list, lists and archives under $apt_dir; the
# machine's other repositories are not read.
set -- -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$apt_dir/sources.list.d" \
       -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache::Archives="$apt_dir/archives" \
       -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" -o APT::Sandbox::User=root \
       -o Debug::NoLocking=1 -o Acquire::Languages=none
apt-get "$@" -qq update >&2
# Downloads stay in $cache/debian-source: apt-get source reuses files whose
# checksums match, so a later run downloads nothing again.
dl=$cache/debian-source
mkdir -p "$dl"
rm -rf "$dl"/pytorch-*/
if ! (cd "$dl" && apt-get "$@" -q source "pytorch=$version" >&2); then
  # The mirror may lack the Debian packaging tarball (debian.tar.xz) while it
  # has the upstream one: unpack the upstream release tree after checking it
  # against the .dsc's checksum. Debian's patches are then not applied.
  (cd "$dl" && apt-get "$@" -q source --download-only "pytorch=$version" >&2) || true
  dsc=$dl/pytorch_$(echo "$version" | sed 's/^[0-9]*://').dsc
  orig=$(ls "$dl"/pytorch_"$upstream".orig.tar.* 2>/dev/null | head -n 1)
  if [ ! -f "$dsc" ] || [ -z "$orig" ]; then
    echo "$0: apt-get source pytorch=$version fetched neither the source package nor its upstream tarball" >&2
    exit 1
  fi
  want=$(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 } on { print $1, $3 }' "$dsc" |
         awk -v f="$(basename "$orig")" '$2 == f { print $1 }')
  have=$(sha256sum "$orig" | cut -d' ' -f1)
  if [ -z "$want" ] || [ "$want" != "$have" ]; then
    echo "$0: $orig does not match the checksum in $dsc" >&2
    exit 1
  fi
  echo "$0: the Debian packaging tarball could not be fetched; unpacking the upstream tree $(basename "$orig") (checked against the .dsc) without Debian's patches" >&2
  mkdir -p "$dl/unpack.tmp"
  tar -C "$dl/unpack.tmp" -xf "$orig"
  top=$(find "$dl/unpack.tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
  mv "$top" "$dl/pytorch-$upstream"
  rm -rf "$dl/unpack.tmp"
fi
got=$(find "$dl" -mindepth 1 -maxdepth 1 -type d -name 'pytorch-*' | head -n 1)
if [ -z "$got" ]; then
  echo "$0: apt-get source pytorch=$version unpacked nothing in $dl" >&2
  exit 1
fi
rm -rf "$tree"
mv "$got" "$tree"
echo "$version" > "$stamp"
echo "$tree"
