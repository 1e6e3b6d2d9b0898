#!/usr/bin/env bash
# Checks H4R's OpenAPI description with the tools others use on it: builds
# h4r, serves the demo corpus on a free loopback port, dumps /openapi.json,
# validates it (two validators of the official OpenAPI schema), lints it
# (redocly, rules in redocly.yaml), generates a typed client from it
# (openapi-typescript + openapi-fetch), compiles the client with tsc and
# makes one real call (a context pack). Any failure exits non-zero.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
# Redocly sends usage telemetry and checks for updates unless told not to.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

npm ci --no-audit --no-fund --loglevel=error

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build h4r"
(cd "$root" && go build -o "$work/h4r" ./cmd/h4r)

# A free port: the OS picks one, which is released for h4r to take.
port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
base="http://127.0.0.1:$port"

echo "== h4r serve --demo on $base"
# A clean environment: no keys file, database or NATS from the caller's.
env -i PATH="$PATH" HOME="${HOME:-$work}" H4R_DATA_DIR="$work/data" H4R_LOG_LEVEL=warn \
  "$work/h4r" serve --demo --addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!
ready=""
for _ in $(seq 1 120); do
  if node -e 'fetch(process.argv[1]).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))' "$base/health/ready"; then
    ready=yes
    break
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    break
  fi
  sleep 0.5
done
if [ -z "$ready" ]; then
  echo "h4r did not become ready; its log:"
  cat "$work/serve.log"
  exit 1
fi

mkdir -p build
echo "== dump /openapi.json"
node -e 'fetch(process.argv[1]).then(async r=>{if(!r.ok){console.error("status",r.status);process.exit(1)}require("fs").writeFileSync(process.argv[2],await r.text())})' \
  "$base/openapi.json" build/openapi.json

echo "== validate"
node validate.mjs build/openapi.json

echo "== redocly lint"
npx --no-install redocly lint build/openapi.json

echo "== generate the client (openapi-typescript) and compile it (tsc)"
# Defaults do not make a field required: a request may leave it out.
npx --no-install openapi-typescript build/openapi.json --default-non-nullable false -o build/h4r.d.ts
npx --no-install tsc -p tsconfig.json

echo "== call: POST /v1/context-pack through the generated client"
node build/js/client.js "$base"
echo "== OpenAPI conformance: ok"
