#!/bin/sh
# Builds conform's container image without a container engine, from the
# linux binaries GoReleaser left in DIST (default dist), as an OCI image
# layout in DIST/image: one image per architecture, busybox-static (Debian's)
# as /bin/sh, conform as the entrypoint, nonroot in /work. .ci/image's
# conform-image does the work (go-containerregistry); docs/releasing.md.
#
#   sh .ci/release/image.sh [DIST]
#
# BUSYBOX_DIR: a directory of busybox-ARCH, busybox.version and
# busybox.copyright to use instead of fetching them (.ci/release/busybox.sh).
set -eu
cd "$(dirname "$0")/../.."
dist=$(cd "${1:-dist}" && pwd)
bb=${BUSYBOX_DIR:-}
if [ -z "$bb" ]; then
  bb=$dist/busybox
  sh .ci/release/busybox.sh "$bb" amd64 arm64
fi
bb=$(cd "$bb" && pwd)
version=$(sh .ci/release/version.sh)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(git log -1 --format=%ct 2>/dev/null || echo 0)
rm -rf "$dist/image"
go run -C .ci/image . build --dist "$dist" --busybox-dir "$bb" \
  --version "$version" --commit "$commit" --created "$created" --out "$dist/image"
