# The conform container image: a static binary in a distroless image, run as
# a non-root user, with /work as the working directory for reports.
#
#   docker build -t conform --build-arg VERSION=v0.2.0 --build-arg COMMIT="$(git rev-parse HEAD)" .
#   docker run --rm conform version
#   docker run --rm --network host -e CONFORM_API_KEY \
#     -v "$PWD/conform-report:/work/conform-report" --user "$(id -u):$(id -g)" \
#     conform run --target http://127.0.0.1:8080
#
# See docs/ci.md. The build itself is .ci/build.sh, shared with the GitHub
# Action and the GitLab template.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Dependencies first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG COMMIT=""
# CGO_ENABLED=0 -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}"
RUN VERSION="${VERSION}" COMMIT="${COMMIT}" sh .ci/build.sh /out/conform \
 && /out/conform version \
 && mkdir -p /out/work

FROM gcr.io/distroless/static:nonroot
ARG VERSION=""
ARG COMMIT=""
LABEL org.opencontainers.image.title="conform" \
      org.opencontainers.image.description="Conformance test suite for the Harn Agents Protocol v1" \
      org.opencontainers.image.source="https://github.com/harn-conform/conform" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
# distroless/static carries the CA certificates (HTTPS targets; --ca-file for
# a private CA) and tzdata; there is no shell.
COPY --from=build /out/conform /usr/local/bin/conform
COPY --from=build --chown=65532:65532 /out/work /work
WORKDIR /work
USER 65532:65532
ENTRYPOINT ["conform"]
CMD ["help"]
