# The knmstate image, for those who build with a container engine at hand:
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t knmstate .
#
# `make images` builds the same image without one, reproducibly, from
# bin/knmstate (internal/image, docs/images.md). This file is not built by
# the project's own tests: its development VM has no container engine.
# internal/image's tests read it and check that the build stage assembles
# the same paths, modes and symlink as internal/image.KnmstateFiles, so the
# two cannot drift. The final stage copies the assembled tree whole:
# COPY follows a symlink named as its source, and one COPY keeps the link
# and /tmp's mode as they are.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath \
	-ldflags "-X github.com/knmstate/knmstate/internal/version.Version=${VERSION}" \
	-o /out/knmstate ./cmd/knmstate
# The image's files, one command each (ca-certificates comes with the
# golang image, which is Debian).
RUN install -D -m 0755 /out/knmstate /rootfs/usr/bin/knmstate \
	&& ln -s knmstate /rootfs/usr/bin/nmstatectl \
	&& install -D -m 0644 /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ca-certificates.crt \
	&& install -d -m 1777 /rootfs/tmp

FROM scratch
ARG VERSION=dev
COPY --from=build /rootfs/ /
ENV PATH=/usr/bin
ENTRYPOINT ["/usr/bin/knmstate"]
LABEL org.opencontainers.image.title="knmstate" \
	org.opencontainers.image.description="Declarative node networking for Kubernetes (nmstate.io API); also nmstatectl" \
	org.opencontainers.image.source="https://github.com/knmstate/knmstate" \
	org.opencontainers.image.version="${VERSION}"
