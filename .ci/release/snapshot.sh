#!/bin/sh
# CI's release rehearsal, so that the release configuration cannot rot:
#   1. goreleaser check: the whole .goreleaser.yaml is valid;
#   2. a snapshot release (no tag, nothing published) into dist/: archives,
#      SBOMs and SHA256SUMS, as a release makes them;
#   3. the container image from its linux binaries, without a container
#      engine (.ci/release/image.sh);
#   4. the image unpacked and run (.ci/release/smoke.sh).
#
#   sh .ci/release/snapshot.sh            linux/amd64 and linux/arm64 only
#   CONFORM_SNAPSHOT=all sh .ci/release/snapshot.sh   all six targets
#
# The six targets cost six cross-builds of conform; CI builds the two linux
# ones (what the image needs) from the same configuration, narrowed to
# linux in a copy, and `goreleaser check` validates the whole file.
set -eu
cd "$(dirname "$0")/../.."
config=.goreleaser.yaml
case ${CONFORM_SNAPSHOT:-linux} in
  all) ;;
  linux)
    goos='    goos: [linux, darwin, windows]'
    grep -qxF "$goos" .goreleaser.yaml || { echo "snapshot.sh: .goreleaser.yaml no longer has the line '$goos' to narrow" >&2; exit 1; }
    config=$(mktemp "${TMPDIR:-/tmp}/goreleaser-linux.XXXXXX")
    trap 'rm -f "$config"' EXIT
    sed 's/^    goos: \[linux, darwin, windows\]$/    goos: [linux]/' .goreleaser.yaml >"$config"
    if cmp -s .goreleaser.yaml "$config"; then echo "snapshot.sh: narrowing to linux changed nothing" >&2; exit 1; fi
    ;;
  *) echo "snapshot.sh: CONFORM_SNAPSHOT is linux or all, not '$CONFORM_SNAPSHOT'" >&2; exit 2 ;;
esac

echo "== goreleaser check"
sh .ci/release/goreleaser.sh check
echo "== goreleaser release --snapshot (${CONFORM_SNAPSHOT:-linux})"
sh .ci/release/goreleaser.sh release --snapshot --clean --config "$config"
cat dist/SHA256SUMS
(cd dist && sha256sum -c SHA256SUMS)
echo "== the container image"
sh .ci/release/image.sh dist
echo "== the image, unpacked and run"
sh .ci/release/smoke.sh dist/image
