#!/usr/bin/env bash
# Builds the H4R container image with buildah from the Containerfile: a
# static binary (no cgo) on an empty base, run as user 65532. No base
# image is pulled and no container is run.
#
#   scripts/image.sh [TAG]        # default h4r:dev
set -euo pipefail
cd "$(dirname "$0")/.."
tag="${1:-h4r:dev}"
mkdir -p dist
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o dist/h4r ./cmd/h4r
# A statically linked binary is what FROM scratch can run.
if command -v file >/dev/null && ! file dist/h4r | grep -q "statically linked"; then
  echo "dist/h4r is not statically linked" >&2; exit 1
fi
buildah --storage-driver vfs build --format docker --isolation chroot -f Containerfile -t "$tag" .
buildah --storage-driver vfs inspect --type image --format 'user={{.Docker.Config.User}} entrypoint={{.Docker.Config.Entrypoint}} volumes={{.Docker.Config.Volumes}} healthcheck={{.Docker.Config.Healthcheck}}' "$tag"
