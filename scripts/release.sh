#!/usr/bin/env bash
# Builds release archives of h4r for linux, macOS and Windows on amd64 and
# arm64, with a SHA-256 checksum file, into dist/release/. No cgo: the
# embedded store is pure Go. The version is the tag at HEAD, else the
# commit; the binary records its VCS revision (h4r version).
#
#   scripts/release.sh            # all six targets
#   TARGETS="linux/amd64" scripts/release.sh
set -euo pipefail
cd "$(dirname "$0")/.."

version="$(git describe --tags --exact-match 2>/dev/null || git rev-parse --short=12 HEAD)"
targets="${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}"
out="dist/release"
rm -rf "$out"
mkdir -p "$out"

for target in $targets; do
  goos="${target%/*}"; goarch="${target#*/}"
  name="h4r_${version}_${goos}_${goarch}"
  dir="$(mktemp -d)"
  exe="h4r"; [ "$goos" = windows ] && exe="h4r.exe"
  echo "building $name"
  CGO_ENABLED=0 GOOS="$goos" GOARCH="$goarch" go build -trimpath -ldflags "-s -w -X main.releaseVersion=$version" \
    -o "$dir/$exe" ./cmd/h4r
  cp README.md LICENSE* "$dir/" 2>/dev/null || true
  if [ "$goos" = windows ]; then
    (cd "$dir" && zip -q -r "$OLDPWD/$out/$name.zip" .)
  else
    tar -C "$dir" -czf "$out/$name.tar.gz" .
  fi
  rm -rf "$dir"
done

(cd "$out" && sha256sum ./*.tar.gz ./*.zip 2>/dev/null | sed 's| \./| |' > checksums.txt)
echo "archives and checksums.txt in $out"
