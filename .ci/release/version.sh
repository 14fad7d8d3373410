#!/bin/sh
# Prints conform's version as the source states it (releaseVersion in
# cmd/conform/version.go), for scripts that need it before there is a
# binary to ask. TestDistVersion checks it prints what `conform version` says.
set -eu
cd "$(dirname "$0")/../.."
v=$(sed -n 's/^const releaseVersion = "\([^"]*\)"$/\1/p' cmd/conform/version.go)
case $v in
  '' | *[!0-9A-Za-z.+-]*) echo "version.sh: no releaseVersion constant in cmd/conform/version.go" >&2; exit 1 ;;
esac
echo "$v"
