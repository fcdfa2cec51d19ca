# rlserver container image: a static binary on a distroless base.
#   docker build -t rlserver . && docker run -p 6379:6379 -v rl-data:/data rlserver
# Protected mode is on: without a password only clients inside the container
# are served. Set one with -e RLSERVER_REQUIREPASS=..., or mount users:
#   -v ./users.acl:/etc/rlserver/users.acl:ro -e RLSERVER_ACLFILE=/etc/rlserver/users.acl
# It runs as uid:gid 65532:65532 (distroless "nonroot"). A named volume takes
# /data's owner from the image; a host directory mounted at /data must be
# writable by 65532 (sudo chown 65532:65532 ./rl-data), or run the container
# as the directory's owner (--user "$(id -u):$(id -g)").
# Where no base image can be pulled, deploy/docker/build-scratch.sh builds the
# same image from the static binary alone (deploy/docker/Dockerfile.scratch);
# integration/container_test.go builds and runs that one.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/rlserver ./cmd/rlserver && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
# VERSION is command.Version (a test keeps them equal); override it for a
# build of another commit: docker build --build-arg VERSION=... .
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="rlserver" \
      org.opencontainers.image.description="A rate-limit server that speaks the Redis protocol" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/rlserver /usr/local/bin/rlserver
COPY --from=build --chown=65532:65532 /out/data /data
ENV RLSERVER_BIND=0.0.0.0 RLSERVER_DIR=/data
VOLUME /data
EXPOSE 6379
USER 65532:65532
# PING over loopback, with RLSERVER_REQUIREPASS when set; no shell needed.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["/usr/local/bin/rlserver", "--healthcheck"]
ENTRYPOINT ["/usr/local/bin/rlserver"]
