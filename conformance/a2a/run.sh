#!/usr/bin/env bash
# Checks H4R's A2A endpoint with the official A2A JS SDK, both the current
# major (protocol 1.0) and 0.3: npm ci, build h4r, serve the demo corpus
# with two API keys on a free loopback port, run the scripts, stop the
# server. Exits non-zero on any failure. H4R_BIN names a built h4r to use
# instead of building one.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
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

(cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
if [ -n "${H4R_BIN:-}" ]; then
  cp "$H4R_BIN" "$work/h4r"
else
  (cd "$root" && go build -o "$work/h4r" ./cmd/h4r)
fi

key1="a2a-conformance-key-one"
key2="a2a-conformance-key-two"
sha() { printf %s "$1" | "$work/h4r" keys hash; }
cat > "$work/keys.json" <<JSON
[
  {"sha256": "$(sha "$key1")", "principal": {"id": "conformance_one", "securityLevel": "internal"}, "routes": ["read"]},
  {"sha256": "$(sha "$key2")", "principal": {"id": "conformance_two", "securityLevel": "internal"}, "routes": ["read"]}
]
JSON

port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
H4R_DATA_DIR="$work/data" H4R_API_KEYS_FILE="$work/keys.json" H4R_LOG_LEVEL=warn \
  "$work/h4r" serve --demo --addr "127.0.0.1:$port" >"$work/serve.log" 2>&1 &
pid=$!

url="http://127.0.0.1:$port"
ready() { node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$url/health/ready"; }
for _ in $(seq 1 150); do
  if ready; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then cat "$work/serve.log"; echo "h4r serve exited"; exit 1; fi
  sleep 0.2
done
ready || { cat "$work/serve.log"; echo "h4r serve is not ready"; exit 1; }

status=0
for script in v1.mjs v03.mjs; do
  H4R_URL="$url" H4R_KEY="$key1" H4R_KEY2="$key2" node "$here/$script" || status=1
done
if [ "$status" -ne 0 ]; then
  echo "--- h4r serve log"; cat "$work/serve.log"
fi
exit "$status"
