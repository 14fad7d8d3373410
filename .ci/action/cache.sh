#!/bin/sh
# The GitHub Action's cache step: names the Go module and build caches and a
# key for them, so actions/cache keeps them between runs (setup-go's own
# cache keys on files inside the workspace, and the action's go.sum is
# outside it). Writes to $GITHUB_OUTPUT:
#
#   key          conform-go-OS-ARCH-GOVERSION-<go.sum's SHA-256>[-CONFORM_REF]
#   restore-key  the key without its last part
#   gomodcache, gocache   the directories to keep (go env)
#
# Without Go on PATH it writes nothing, and the cache step is skipped.
set -eu
src=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set: run as a GitHub Action step}
out=${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}
if ! command -v go >/dev/null 2>&1; then
  echo "no go on PATH: the Go caches are not kept"
  exit 0
fi
if command -v sha256sum >/dev/null 2>&1; then
  sum=$(sha256sum "$src/go.sum" | cut -c1-16)
else
  sum=$(shasum -a 256 "$src/go.sum" | cut -c1-16)
fi
prefix="conform-go-$(go env GOOS)-$(go env GOARCH)-$(go env GOVERSION)"
key="$prefix-$sum"
if [ -n "${CONFORM_REF:-}" ]; then
  # conform-ref builds another checkout, whose go.sum is not known yet.
  key="$key-$(printf '%s' "$CONFORM_REF" | tr -c 'A-Za-z0-9._-' '_')"
fi
{
  echo "key=$key"
  echo "restore-key=$prefix-"
  echo "gomodcache=$(go env GOMODCACHE)"
  echo "gocache=$(go env GOCACHE)"
} >>"$out"
echo "Go caches keyed $key"
