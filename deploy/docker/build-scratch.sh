#!/usr/bin/env bash
# Builds the rlserver image from the static binary alone (no base image is
# pulled): deploy/docker/Dockerfile.scratch, the same final stage as the
# repository's Dockerfile on scratch.
#   deploy/docker/build-scratch.sh [tag]      (default rlserver:latest)
# Needs Go and a running Docker daemon.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tag=${1:-rlserver:latest}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

(cd "$repo" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$ctx/rlserver" ./cmd/rlserver)
version=$("$ctx/rlserver" --version | awk '{print $2}')
mkdir "$ctx/etc" "$ctx/data"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' > "$ctx/etc/passwd"
echo 'nonroot:x:65532:' > "$ctx/etc/group"
docker build -q -f "$repo/deploy/docker/Dockerfile.scratch" --build-arg VERSION="$version" -t "$tag" "$ctx"
