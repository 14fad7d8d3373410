# The conform container image for people with Docker: the static binary in
# distroless's debug image, which has a shell (busybox, /busybox/sh, on PATH)
# so that --restart-cmd (run with `sh -c`) works; run as a non-root user,
# with /work as the working directory for reports. The released image is
# built without a daemon (.ci/release/image.sh, docs/releasing.md).
#
#   docker build -t conform --build-arg COMMIT="$(git rev-parse HEAD)" .
#   docker run --rm conform version
#   mkdir -p conform-report
#   docker run --rm --network host --user "$(id -u):$(id -g)" -e CONFORM_API_KEY \
#     -v "$PWD/conform-report:/work/conform-report" \
#     conform run --target http://127.0.0.1:8080 --wait-for-target 60s --out conform-report
#
# See docs/ci.md, "Install" (this is its block: a test keeps the two the same). The build itself is .ci/build.sh, shared with the GitHub
# Action and the GitLab template.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG COMMIT=""
# CGO_ENABLED=0 -trimpath -ldflags "-s -w -X main.commit=${COMMIT}"; the
# version is the source's (cmd/conform/version.go).
RUN COMMIT="${COMMIT}" sh .ci/build.sh /out/conform \
 && mkdir -p /out/work

FROM gcr.io/distroless/static:debug-nonroot
ARG COMMIT=""
LABEL org.opencontainers.image.title="conform" \
      org.opencontainers.image.description="Conformance test suite for the Harn Agents Protocol v1" \
      org.opencontainers.image.source="https://github.com/harn-conform/conform" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.revision="${COMMIT}"
# distroless/static carries the CA certificates (HTTPS targets; --ca-file for
# a private CA) and tzdata; its debug variant adds busybox in /busybox.
COPY --from=build /out/conform /usr/local/bin/conform
COPY --from=build --chown=65532:65532 /out/work /work
WORKDIR /work
USER 65532:65532
ENTRYPOINT ["conform"]
CMD ["help"]
