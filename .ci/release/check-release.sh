#!/bin/sh
# GoReleaser's before-hook: a snapshot builds anything; a release must be
# cut from a release commit, whose source version is a plain version (no
# "+dev"), dated in CHANGELOG.md, and whose tag, if GoReleaser has one,
# names that version. docs/releasing.md.
#
#   sh .ci/release/check-release.sh VERSION IS_SNAPSHOT TAG
set -eu
cd "$(dirname "$0")/../.."
version=$1 snapshot=$2 tag=${3:-}
[ "$snapshot" = true ] && exit 0
case $version in
  *+*) echo "check-release: the source says $version, a development version: release from the release commit (docs/releasing.md)" >&2; exit 1 ;;
esac
if ! grep -q "^## \[$version\] - [0-9]" CHANGELOG.md; then
  echo "check-release: CHANGELOG.md has no dated heading for $version" >&2
  exit 1
fi
if [ -n "$tag" ] && [ "$tag" != "v$version" ]; then
  echo "check-release: the tag is $tag, but the source says $version (the tag must be v$version)" >&2
  exit 1
fi
