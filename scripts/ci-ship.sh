#!/usr/bin/env bash
# Checks what ships beside the binary, as a new user's tools see it: the
# Compose file (docker-compose config), the Helm chart (helm lint, helm
# template, and the rendered manifests against the Kubernetes API types),
# the Prometheus alert rules (promtool check and test rules) and the metrics
# a running server exposes (promtool check metrics), the container
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

# check_served_metrics lints what a running h4r serve --demo exposes on
# /metrics with promtool check metrics (names, units, help texts, counter
# suffixes), after a pack and a refused request have filled the labelled
# series.
check_served_metrics() {
  go build -o "$tools/h4r" ./cmd/h4r
  local port base server status=0
  port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  base="http://127.0.0.1:$port"
  H4R_LOG_LEVEL=warn "$tools/h4r" serve --demo --addr "127.0.0.1:$port" --data-dir "$tools/metrics-serve" &
  server=$!
  for _ in $(seq 1 120); do "$tools/h4r" health --addr "127.0.0.1:$port" --ready 2>/dev/null && break; sleep 0.5; done
  curl -sf "$base/v1/context-pack" -H 'Content-Type: application/json' \
    -d '{"query": {"type": "hybrid", "text": "deploy rollback"}}' >/dev/null || status=1
  curl -s "$base/v1/context-pack" -H 'Content-Type: application/json' -d '{"query": 1}' >/dev/null || status=1
  curl -sf "$base/metrics" > "$tools/metrics.txt" || status=1
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  [ "$status" -eq 0 ] || { echo "h4r serve --demo did not answer a pack or /metrics"; return 1; }
  echo "$(grep -c '^h4r_' "$tools/metrics.txt") h4r samples"
  promtool check metrics < "$tools/metrics.txt"
}

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
check_served_metrics

echo "-- container image (buildah; built, never run here)"
scripts/image.sh h4r:ci

echo "-- release archives (two targets: a cross-compiled build proves no cgo)"
TARGETS="linux/amd64 windows/arm64" scripts/release.sh
(cd dist/release && sha256sum -c checksums.txt)
