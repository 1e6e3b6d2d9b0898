#!/usr/bin/env bash
# H4R's MCP server checked with the official MCP clients, the TypeScript
# SDK (check.mjs) and the Inspector CLI (inspector.mjs), over streamable
# HTTP (/mcp on h4r serve) and stdio (h4r mcp). Installs the clients from
# package-lock.json (npm ci; nothing else is downloaded), builds h4r, starts
# h4r serve --demo with two API keys on a free loopback port, runs the
# checks and stops it. Exit status non-zero on any failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"

echo "== npm ci (conformance/mcp)"
# No install scripts: none of the clients needs one (the Inspector's only
# sets up its source checkout), and none then runs at install time.
# package.json pins vite, which the Inspector's web UI uses and the CLI
# does not, to 8.3.8: 8.4 adds an optional Windows-only dependency the
# registry answered 404 for when this was locked, and npm ci then refuses
# the lockfile.
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

tmp="$(mktemp -d)"
server=""
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

echo "== go build h4r"
(cd "$root" && go build -o "$tmp/h4r" ./cmd/h4r)

admin_key="conformance-admin-key"
read_key="conformance-read-key"
hash() { printf %s "$1" | "$tmp/h4r" keys hash; }
cat > "$tmp/keys.json" <<KEYS
[{"sha256": "$(hash "$admin_key")", "principal": {"id": "conformance_admin", "type": "specialist", "securityLevel": "internal", "authorizedGroups": ["ops"]}, "routes": ["read", "ingest", "admin"], "rateLimitPerMinute": 100000},
 {"sha256": "$(hash "$read_key")", "principal": {"id": "conformance_reader", "type": "specialist", "securityLevel": "public", "authorizedGroups": []}, "routes": ["read"], "rateLimitPerMinute": 100000}]
KEYS

port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
base="http://127.0.0.1:$port"
echo "== h4r serve --demo on $base"
H4R_LOG_LEVEL=warn "$tmp/h4r" serve --demo --addr "127.0.0.1:$port" --data-dir "$tmp/serve" --api-keys-file "$tmp/keys.json" &
server=$!
node wait.mjs "$base/health/live"

status=0
echo "== MCP TypeScript SDK over streamable HTTP"
node check.mjs http "$base/mcp" "$admin_key" "$read_key" || status=1
echo "== MCP TypeScript SDK over stdio (h4r mcp)"
node check.mjs stdio "$tmp/h4r" "$tmp/stdio" || status=1
echo "== MCP Inspector CLI"
node inspector.mjs "$base/mcp" "$admin_key" "$tmp/h4r" "$tmp/inspector" || status=1

if [ "$status" -ne 0 ]; then
  echo "conformance/mcp: FAILED"
else
  echo "conformance/mcp: all checks passed"
fi
exit "$status"
