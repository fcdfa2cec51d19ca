# rlserver container image: a static binary on a distroless base.
# docker build -t rlserver . && docker run -p 6379:6379 -v rl-data:/data rlserver
# Protected mode is on: without a password only clients inside the container
# are served. Set one with -e RLSERVER_REQUIREPASS=..., or mount users:
#   -v ./users.acl:/etc/rlserver/users.acl:ro -e RLSERVER_ACLFILE=/etc/rlserver/users.acl
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/rlserver ./cmd/rlserver && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/rlserver /usr/local/bin/rlserver
COPY --from=build --chown=65532:65532 /out/data /data
ENV RLSERVER_BIND=0.0.0.0 RLSERVER_DIR=/data
VOLUME /data
EXPOSE 6379
USER nonroot
ENTRYPOINT ["/usr/local/bin/rlserver"]
