#!/bin/sh
# Builds the release binary of conform: static (CGO_ENABLED=0), reproducible
# paths (-trimpath), stripped, with the version and commit stamped in. The
# Dockerfile, the GitHub Action and the GitLab template all build through this
# script, so they build the same thing.
#
#   sh .ci/build.sh OUTPUT            e.g. sh .ci/build.sh bin/conform
#
# VERSION and COMMIT come from the environment; when unset they are taken from
# git if this is a git checkout (else conform falls back to the module version,
# or "dev"). Run from anywhere: the module built is this script's parent
# directory, or CONFORM_SRC if set.
set -eu

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
  echo "usage: sh .ci/build.sh OUTPUT" >&2
  exit 2
fi
out=$1
case $out in
  /*) ;;
  *) out="$(pwd)/$out" ;;
esac
cd "${CONFORM_SRC:-$(dirname "$0")/..}"

version=${VERSION:-}
commit=${COMMIT:-}
if command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
  [ -n "$version" ] || version=$(git describe --tags --always --dirty 2>/dev/null || true)
  [ -n "$commit" ] || commit=$(git rev-parse HEAD 2>/dev/null || true)
fi

for v in "$version" "$commit"; do
  case $v in
    *[!A-Za-z0-9._+/-]*) echo "build.sh: VERSION and COMMIT may hold letters, digits and ._+/- only, got '$v'" >&2; exit 2 ;;
  esac
done

ldflags="-s -w"
[ -z "$version" ] || ldflags="$ldflags -X main.version=$version"
[ -z "$commit" ] || ldflags="$ldflags -X main.commit=$commit"

CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out" ./cmd/conform
echo "built $out (version ${version:-from the module}, commit ${commit:-unknown})"
