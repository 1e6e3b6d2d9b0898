#!/usr/bin/env bash
# Checks what ships beside the binary, as a new user's tools see it: the
# Compose file (docker-compose config), the Helm chart (helm lint, helm
# template, and the rendered manifests against the Kubernetes API types),
# the Prometheus alert rules (promtool check and test rules), the container
# image (built with buildah; never run here) and the release script.
# Tools come from Debian's packages and the Go module proxy at pinned
# versions.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=v3.22.0
tools="${TOOLS_DIR:-$(mktemp -d)}"

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v docker-compose >/dev/null || need+=(docker-compose)
command -v promtool >/dev/null || need+=(prometheus)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -x "$tools/helm" ]; then
  GOBIN="$tools" go install "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
fi

echo "-- docker-compose config"
docker-compose -f compose.yaml config -q
docker-compose -f compose.yaml --profile qdrant --profile neo4j config -q

echo "-- helm lint and template"
"$tools/helm" lint --strict deploy/charts/h4r
"$tools/helm" template h4r deploy/charts/h4r > "$tools/default.yaml"
"$tools/helm" template h4r deploy/charts/h4r \
  --set postgresql.url=postgres://h4r@db:5432/h4r --set ingress.enabled=true \
  --set autoscaling.enabled=true --set qdrant.url=http://qdrant:6334 > "$tools/full.yaml"
(cd deploy/validate && go test -count=1 ./... && go run . < "$tools/default.yaml" && go run . < "$tools/full.yaml")

echo "-- promtool"
promtool check rules deploy/prometheus/h4r-alerts.yml
promtool test rules deploy/prometheus/h4r-alerts_test.yml

echo "-- container image (buildah; built, never run here)"
scripts/image.sh h4r:ci

echo "-- release archives (two targets: a cross-compiled build proves no cgo)"
TARGETS="linux/amd64 windows/arm64" scripts/release.sh
(cd dist/release && sha256sum -c checksums.txt)
