#!/bin/sh
# Runs GoReleaser as pinned in .ci/tools/go.mod (built once, then taken from
# the Go build cache), with conform's source version as CONFORM_VERSION and
# the pinned cyclonedx-gomod on PATH for the SBOMs. Arguments go to
# GoReleaser, from the repository root:
#
#   sh .ci/release/goreleaser.sh check
#   sh .ci/release/goreleaser.sh release --snapshot --clean
#   sh .ci/release/goreleaser.sh build --snapshot --clean --single-target
set -eu
cd "$(dirname "$0")/../.."
CONFORM_VERSION=$(sh .ci/release/version.sh)
export CONFORM_VERSION
tools=.ci/tools/go.mod
goreleaser=$(go tool -modfile="$tools" -n goreleaser)
cyclonedx=$(go tool -modfile="$tools" -n cyclonedx-gomod)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
ln -s "$cyclonedx" "$bin/cyclonedx-gomod"
PATH="$bin:$PATH" "$goreleaser" "$@"
