#!/bin/sh
# Fetches the static busybox of Debian's busybox-static package for each
# architecture given, with apt-get and lists of its own (the system's apt
# configuration and lists are not touched), into OUT:
#
#   sh .ci/release/busybox.sh OUT amd64 arm64
#
# writes OUT/busybox-amd64, OUT/busybox-arm64, OUT/busybox.version (the
# package version), OUT/busybox.copyright (its copyright file, which the
# image carries: busybox is GPL-2.0-only) and OUT/busybox.applets (its
# applets, one a line, which the image links to it in /bin: without them a
# shell finds cat or sleep only through /proc/self/exe). The image's /bin/sh is this
# busybox. Where apt-get cannot (not Debian), fetch the same files by other
# means and give their directory as BUSYBOX_DIR to .ci/release/image.sh.
#
# apt's package lists are tens of MiB, so what one run fetched is kept in
# BUSYBOX_CACHE (default ~/.cache/conform-release/busybox-static) and
# reused; BUSYBOX_REFRESH=1 fetches again (a release does: docs/releasing.md).
set -eu
if [ "$#" -lt 2 ]; then
  echo "usage: sh .ci/release/busybox.sh OUT ARCH..." >&2
  exit 2
fi
out=$1
shift
command -v apt-get >/dev/null 2>&1 || { echo "busybox.sh: no apt-get: fetch Debian's busybox-static yourself and set BUSYBOX_DIR (see this script)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
cache=${BUSYBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conform-release/busybox-static}
if [ "${BUSYBOX_REFRESH:-0}" != 1 ] && [ -s "$cache/busybox.version" ] && [ -s "$cache/busybox.copyright" ] && [ -s "$cache/busybox.applets" ]; then
  hit=1
  for arch in "$@"; do
    [ -s "$cache/busybox-$arch" ] || hit=0
  done
  if [ "$hit" = 1 ]; then
    for arch in "$@"; do
      cp "$cache/busybox-$arch" "$out/"
    done
    cp "$cache/busybox.version" "$cache/busybox.copyright" "$cache/busybox.applets" "$out/"
    echo "busybox-static $(cat "$out/busybox.version") for $* in $out (cached in $cache; BUSYBOX_REFRESH=1 fetches again)"
    exit 0
  fi
fi
apt=$(mktemp -d)
trap 'rm -rf "$apt"' EXIT
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs"
opts="-q -o Acquire::Languages=none -o Dir::State::Lists=$apt/lists -o Dir::Cache=$apt/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o APT::Architecture=$1 -o APT::Architectures::=$1"
for arch in "$@"; do
  opts="$opts -o APT::Architectures::=$arch"
done
# shellcheck disable=SC2086 # opts is a list of words
apt-get $opts update >"$apt/update.log" 2>&1 || { cat "$apt/update.log" >&2; exit 1; }
version=
for arch in "$@"; do
  # shellcheck disable=SC2086
  (cd "$apt/debs" && apt-get $opts download "busybox-static:$arch" >/dev/null)
  deb=$(ls "$apt/debs"/busybox-static_*_"$arch".deb)
  v=$(dpkg-deb -f "$deb" Version)
  if [ -n "$version" ] && [ "$v" != "$version" ]; then
    echo "busybox.sh: busybox-static is $version for one architecture and $v for $arch" >&2
    exit 1
  fi
  version=$v
  dpkg-deb --fsys-tarfile "$deb" | tar -xO ./bin/busybox >"$out/busybox-$arch"
  chmod 755 "$out/busybox-$arch"
  dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/busybox-static/copyright >"$out/busybox.copyright"
done
echo "$version" >"$out/busybox.version"
# The applet list is the same for every architecture of one version: ask
# whichever binary this machine runs.
for arch in "$@"; do
  if "$out/busybox-$arch" --list >"$out/busybox.applets" 2>/dev/null && [ -s "$out/busybox.applets" ]; then
    break
  fi
  rm -f "$out/busybox.applets"
done
[ -s "$out/busybox.applets" ] || { echo "busybox.sh: none of the busybox binaries runs here: cannot list the applets" >&2; exit 1; }
mkdir -p "$cache"
cp "$out"/busybox-* "$out/busybox.version" "$out/busybox.copyright" "$out/busybox.applets" "$cache/"
echo "busybox-static $version for $* in $out"
