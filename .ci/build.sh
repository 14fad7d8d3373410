#!/bin/sh
# Builds conform as the release does: static (CGO_ENABLED=0), reproducible
# paths (-trimpath), stripped, with the commit stamped in. The Dockerfile, the
# GitHub Action and the GitLab template all build through this script, so
# they build the same thing (the release archives come from GoReleaser,
# .goreleaser.yaml, with the same flags).
#
#   sh .ci/build.sh OUTPUT            e.g. sh .ci/build.sh bin/conform
#
# The version is the source's (cmd/conform/version.go), never stamped. COMMIT
# comes from the environment; when unset it is taken from git if this is a
# git checkout ("-dirty" when it has changes), else conform says no commit.
# Run from anywhere: the module built is this script's parent directory, or
# CONFORM_SRC if set.
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

if [ -n "${VERSION:-}" ]; then
  echo "build.sh: VERSION is no longer stamped: the version is the source's (cmd/conform/version.go); unset VERSION" >&2
  exit 2
fi
commit=${COMMIT:-}
if [ -z "$commit" ] && command -v git >/dev/null 2>&1 && git rev-parse --git-dir >/dev/null 2>&1; then
  commit=$(git rev-parse HEAD 2>/dev/null || true)
  if [ -n "$commit" ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    commit=$commit-dirty
  fi
fi

case $commit in
  *[!A-Za-z0-9._+/-]*) echo "build.sh: COMMIT may hold letters, digits and ._+/- only, got '$commit'" >&2; exit 2 ;;
esac

ldflags="-s -w"
[ -z "$commit" ] || ldflags="$ldflags -X main.commit=$commit"

CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out" ./cmd/conform
"$out" version
