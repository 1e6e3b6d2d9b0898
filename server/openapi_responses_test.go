package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/mcptools"
	"github.com/h4r/h4r/metrics"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/trace"
)

// apiCall is one request of TestOpenAPIResponsesMatch: the documented
// route it exercises ("POST /v1/items/{id}/links", as Server.Routes
// writes it), the concrete path, and the status it must answer.
type apiCall struct {
	name   string
	route  string
	method string // defaults to the route's method (another one: a 405)
	path   string // defaults to the route's path
	body   string
	header []string // "Name", "value" pairs; a key is added unless Authorization is given
	status int
	stream bool // the answer does not end (WebSocket, event stream): read the head only
	// save names a value later calls use as {{save}} in their path, body
	// or header: the answer's JSON field from (a dotted path), or its
	// header from when from starts with "header:".
	save, from string
}

// fullStack is the real service as cmd/h4r serve wires it, every feature
// on (packs, items, decisions, ambient, memory, MCP, RAG, bridge, traces,
// jobs, metrics, policy), behind testdata/keys.json, over the fixture
// items. It returns the base URL.
func fullStack(t *testing.T) (base string, srv *server.Server) {
	t.Helper()
	ctx := context.Background()
	roots := t.TempDir()
	if err := os.WriteFile(filepath.Join(roots, "notes.md"), []byte("# Login selectors\n\nUse data-testid selectors for the login form.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	cfg.BridgeEnabled = true
	cfg.IngestRoots = roots
	a, err := app.Open(ctx, cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	if _, err := a.Store.Upsert(ctx, fixtureItems(t)); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	jb, err := app.OpenJobs(ctx, a, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jb.Close() })
	b, err := a.Bridge(quiet)
	if err != nil {
		t.Fatal(err)
	}
	hub, err := decision.NewHub(a.Decisions, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	reg := mcptools.NewRegistry("h4r", "test")
	mcptools.Standard(reg, mcptools.Deps{Packer: a.Engine, Memory: a.Memory, Items: a.Store.Count, Timeout: cfg.RequestTimeout})
	traces := trace.NewService(a.Store, trace.WithClock(clock), trace.WithLogger(quiet), trace.WithSearch(a.Engine, a.Slicer))
	srv = server.New(a.Engine, a.Store,
		server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout), server.WithAuthenticator(keys),
		server.WithClock(clock), server.WithRateLimit(100000), server.WithMetrics(metrics.New()),
		server.WithPolicy(a.Policy), server.WithDecisions(a.Decisions), server.WithMemory(a.Memory), server.WithMCP(reg),
		server.WithAmbient(hub, 0), server.WithRAG(a.RAG()), server.WithBridge(b), server.WithJobs(jb),
		server.WithTraces(traces, server.TraceOptions{WebhookSecret: []byte(webhookSecret)}))
	return (&stack{srv: srv, store: a.Store}).serve(t), srv
}

// TestOpenAPIResponsesMatch calls every route of the real router with a
// valid request, and with bad ones, and checks each answer against what
// /openapi.json says of that route and status: the status is documented,
// and the body validates against the documented schema (JSON Schema
// 2020-12), where an object schema that lists its properties is taken
// as listing all of them, so that a field added to, renamed in or missing
// from an answer fails here until the description says so.
func TestOpenAPIResponsesMatch(t *testing.T) {
	base, srv := fullStack(t)
	spec := loadOpenAPI(t, base)
	traceBody := string(traceFixture(t, nil))
	ping := `{"zen": "Design for failure.", "hook_id": 1, "hook": {"type": "Repository", "id": 1, "events": ["push"]}, "repository": {"full_name": "acme/gateway"}}`
	mcpInit := `{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`
	mcpAccept := []string{"Accept", "application/json, text/event-stream"}

	// Calls run in order: later ones use what earlier ones made (an item,
	// a decision, a job, a pack id, an MCP session).
	calls := []apiCall{
		{name: "live", route: "GET /health/live", status: 200},
		{name: "ready", route: "GET /health/ready", status: 200},
		{name: "description", route: "GET /openapi.json", status: 200},
		{name: "metrics", route: "GET /metrics", status: 200},
		{name: "policy", route: "GET /v1/policy", status: 200},
		{name: "agent card", route: "GET /.well-known/agent-card.json", status: 200},

		{name: "pack", route: "POST /v1/context-pack", body: healerBody, header: bearer(healerKey), status: 200},
		{name: "pack with graph", route: "POST /v1/context-pack", body: `{"query": {"type": "causal", "text": "login"}, "anchors": ["mem-root"], "max_hops": 2, "include_graph": true, "tldr_sentences": 2}`, status: 200},
		{name: "pack without graph", route: "POST /v1/context-pack", body: `{"query": {"text": "checkout"}, "include_graph": false, "tldr_sentences": 0}`, status: 200},
		{name: "pack bad query type", route: "POST /v1/context-pack", body: `{"query": {"type": "fuzzy", "text": "x"}}`, status: 400},
		{name: "pack malformed JSON", route: "POST /v1/context-pack", body: `{"query": `, status: 400},
		{name: "pack as text", route: "POST /v1/context-pack", body: healerBody, header: []string{"Content-Type", "text/plain"}, status: 415},
		{name: "pack by GET", route: "POST /v1/context-pack", method: http.MethodGet, status: 405},
		{name: "pack without a key", route: "POST /v1/context-pack", body: healerBody, header: []string{"Authorization", ""}, status: 401},
		{name: "pack with an ingest key", route: "POST /v1/context-pack", body: healerBody, header: bearer(ingestKey), status: 403},
		{name: "envelope", route: "POST /v1/a2a", body: `{"meta": {"type": "ContextRequest"}, "payload": {"query": {"text": "login selector"}, "limit": 2}}`, status: 200},
		{name: "envelope bad payload", route: "POST /v1/a2a", body: `{"meta": {"type": "ContextRequest"}, "payload": {"query": {"type": "fuzzy"}}}`, status: 400},
		{name: "envelope without a key", route: "POST /v1/a2a", body: `{}`, header: []string{"Authorization", ""}, status: 401},
		{name: "a2a rpc", route: "POST /v1/a2a/rpc", body: `{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "login selector"}]}}}`, status: 200},

		{name: "upsert", route: "POST /v1/items", body: `{"id": "oa-item", "kind": "note", "text": "OpenAPI conformance note about login selectors", "metadata": {"tags": ["qa"]}}`, status: 200},
		{name: "upsert without text", route: "POST /v1/items", body: `{"id": "oa-bad"}`, status: 400},
		{name: "get item", route: "GET /v1/items/{id}", path: "/v1/items/mem-root", status: 200},
		{name: "get missing item", route: "GET /v1/items/{id}", path: "/v1/items/no-such-item", status: 404},
		{name: "add links", route: "POST /v1/items/{id}/links", path: "/v1/items/oa-item/links", body: `{"links": [{"type": "references", "target": "mem-root"}]}`, status: 200},
		{name: "remove links", route: "DELETE /v1/items/{id}/links", path: "/v1/items/oa-item/links", body: `{"links": [{"type": "references", "target": "mem-root"}]}`, status: 200},
		{name: "delete item", route: "DELETE /v1/items/{id}", path: "/v1/items/oa-item", status: 204},
		{name: "delete missing item", route: "DELETE /v1/items/{id}", path: "/v1/items/oa-item", status: 404},

		{name: "record decisions", route: "POST /v1/decision-traces", body: mj100Traces, status: 200},
		{name: "record a bad decision", route: "POST /v1/decision-traces", body: `{"decision_traces": [{"id": 7}]}`, status: 400},
		{name: "list decisions", route: "GET /v1/decision-traces", path: "/v1/decision-traces?preset=decisions_by_epic&epic=mj101", status: 200},
		{name: "list decisions without preset", route: "GET /v1/decision-traces", status: 400},
		{name: "get decision", route: "GET /v1/decision-traces/{id}", path: "/v1/decision-traces/dt-one", status: 200},
		{name: "get missing decision", route: "GET /v1/decision-traces/{id}", path: "/v1/decision-traces/dt-none", status: 404},
		{name: "record events", route: "POST /v1/events", body: `{"id": "ev-1", "type": "bead_completed", "epic_id": "mj101", "decision_id": "dt-one", "success": true, "duration_ms": 1200, "timestamp": "2026-03-05T12:00:00Z"}`, status: 200},
		{name: "prefetch", route: "POST /v1/prefetch", body: `{"repo": "/repo", "areas": ["pkg/auth"], "task_description": "OAuth refresh", "limit": 3}`, status: 200},
		{name: "prefetch without repo", route: "POST /v1/prefetch", body: `{}`, status: 400},
		{name: "escalation", route: "POST /v1/escalation", body: `{"repo": "/repo", "area": "pkg/auth", "current_tier": 1, "iterations": 3, "errors": ["timeout"]}`, status: 200},
		{name: "subscribe", route: "GET /v1/subscribe", path: "/v1/subscribe?session_id=oa-session", status: 101, stream: true},
		{name: "subscribe without a session", route: "GET /v1/subscribe", status: 400},

		{name: "memory write", save: "memory", from: "memory_id", route: "POST /v1/memory/write", body: `{"scope": {"session_id": "s-oa", "agent_id": "agent-oa", "repo": "h4r"}, "type": "fix", "payload": {"summary": "login selectors use data-testid"}, "tags": ["login"]}`, status: 200},
		{name: "memory write without scope", route: "POST /v1/memory/write", body: `{"type": "fix", "payload": {}}`, status: 400},
		{name: "memory read", route: "POST /v1/memory/read", body: `{"scope": {"agent_id": "agent-oa"}, "filter": {"text": "selector"}}`, status: 200},
		{name: "memory link", route: "POST /v1/memory/link", body: `{"memory_id": "{{memory}}", "related": {"commit_sha": "abc123"}, "relation": "introduced_in"}`, status: 200},
		{name: "memory link missing", route: "POST /v1/memory/link", body: `{"memory_id": "memory-none", "related": {"commit_sha": "abc123"}, "relation": "introduced_in"}`, status: 404},
		{name: "memory stats", route: "POST /v1/memory/stats", body: `{"scope": {"session_id": "s-oa"}}`, status: 200},

		{name: "rag query", save: "pack", from: "context_pack.id", route: "POST /query", body: `{"session_id": "s-oa", "agent_id": "agent-oa", "query": "login selector failures", "k": 3}`, status: 200},
		{name: "rag query without session", route: "POST /query", body: `{"query": "x"}`, status: 400},
		{name: "rag feedback", route: "POST /feedback", body: `{"context_pack_id": "{{pack}}", "verdict": "useful", "notes": "found the selector"}`, status: 200},
		{name: "rag feedback on no pack", route: "POST /feedback", body: `{"context_pack_id": "cp-none", "verdict": "useful"}`, status: 404},

		{name: "bridge", route: "POST /v1/bridge", body: `{"tool": "think", "params": {"content": "How to optimize database queries", "domain": "engineering"}, "result": {"thought_id": "x"}}`, status: 200},
		{name: "bridge without tool", route: "POST /v1/bridge", body: `{"params": {}}`, status: 400},
		{name: "trajectories", route: "POST /v1/bridge/trajectories", body: `{"trajectories": [{"trajectory_id": "t-oa", "session_id": "s1", "description": "How to optimize database queries", "domain": "engineering", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.8}]}`, status: 200},

		{name: "ingest", save: "job", from: "job_id", route: "POST /ingest", body: `{"sources": [{"type": "fs", "path": "."}]}`, status: 202},
		{name: "ingest without sources", route: "POST /ingest", body: `{"sources": []}`, status: 400},
		{name: "job", route: "GET /v1/jobs/{id}", path: "/v1/jobs/{{job}}", status: 200},
		{name: "missing job", route: "GET /v1/jobs/{id}", path: "/v1/jobs/job-none", status: 404},
		{name: "unschedule a job without a schedule", route: "DELETE /v1/jobs/{id}/schedule", path: "/v1/jobs/{{job}}/schedule", status: 400},
		{name: "unschedule a missing job", route: "DELETE /v1/jobs/{id}/schedule", path: "/v1/jobs/job-none/schedule", status: 404},
		{name: "scheduled ingest", save: "scheduled", from: "job_id", route: "POST /ingest", body: `{"sources": [{"type": "fs", "path": "."}], "opts": {"schedule": "24h"}}`, status: 202},
		{name: "unschedule", route: "DELETE /v1/jobs/{id}/schedule", path: "/v1/jobs/{{scheduled}}/schedule", status: 200},
		{name: "reindex", route: "POST /v1/reindex", body: `{}`, status: 202},
		{name: "backfill signatures", save: "backfill", from: "job_id", route: "POST /admin/backfill-signatures", status: 202},
		{name: "backfill with a body", route: "POST /admin/backfill-signatures", body: `{"all": true}`, status: 400},
		{name: "backfill job", route: "GET /v1/jobs/{id}", path: "/v1/jobs/{{backfill}}", status: 200},

		{name: "trace", route: "POST /v1/traces", body: traceBody, status: 200},
		{name: "trace without sha", route: "POST /v1/traces", body: `{"repo": "acme/gateway"}`, status: 400},
		{name: "search traces", route: "POST /v1/search", body: `{"query": "rate limit", "limit": 3, "include_decisions": true}`, status: 200},
		{name: "trace by repo", route: "GET /v1/trace/{owner}/{name}/{sha}", path: "/v1/trace/acme/gateway/9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d", status: 200},
		{name: "trace by sha", route: "GET /v1/trace/{sha}", path: "/v1/trace/9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d", status: 200},
		{name: "missing trace", route: "GET /v1/trace/{sha}", path: "/v1/trace/0000000000000000000000000000000000000000", status: 404},
		{name: "trace stats", route: "GET /v1/stats", status: 200},
		{name: "webhook ping", route: "POST /webhook/github", body: ping, header: []string{"X-GitHub-Event", "ping", "X-GitHub-Delivery", "d-1", "X-Hub-Signature-256", sign(webhookSecret, []byte(ping))}, status: 200},
		{name: "webhook bad signature", route: "POST /webhook/github", body: ping, header: []string{"X-GitHub-Event", "ping", "X-GitHub-Delivery", "d-2", "X-Hub-Signature-256", sign("wrong", []byte(ping))}, status: 401},

		{name: "mcp initialize", save: "session", from: "header:Mcp-Session-Id", route: "POST /mcp", body: mcpInit, header: mcpAccept, status: 200},
		{name: "mcp stream", route: "GET /mcp", header: append([]string{"Mcp-Session-Id", "{{session}}"}, mcpAccept...), status: 200, stream: true},
		{name: "mcp end session", route: "DELETE /mcp", header: []string{"Mcp-Session-Id", "{{session}}"}, status: 204},
		{name: "mcp unknown session", route: "DELETE /mcp", header: []string{"Mcp-Session-Id", "none"}, status: 404},
		{name: "mcp stream without session", route: "GET /mcp", header: mcpAccept, status: 400},
	}
	checkCoverage(t, spec, calls, srv.Routes())
	calls = append(calls, badCalls(srv)...)

	saved := map[string]string{}
	fill := func(s string) string {
		for k, v := range saved {
			s = strings.ReplaceAll(s, "{{"+k+"}}", v)
		}
		return s
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			method, path, _ := strings.Cut(c.route, " ")
			if c.path == "" {
				c.path = path
			}
			if c.method != "" {
				method = c.method
			}
			header := slices.Clone(c.header)
			for i := range header {
				header[i] = fill(header[i])
			}
			r := callAPI(t, method, base+fill(c.path), fill(c.body), header, c.stream)
			if r.status != c.status {
				t.Fatalf("%s %s answered %d, want %d: %.500s", method, c.path, r.status, c.status, r.body)
			}
			spec.check(t, c.route, r)
			if c.save != "" {
				saved[c.save] = savedValue(t, r, c.from)
			}
		})
	}
}

// TestOpenAPIOperationIDs checks what generated clients and validators
// rely on: the 3.1 dialect the schemas are written in, a server, and on
// every operation a unique camelCase operationId (a client's method name).
func TestOpenAPIOperationIDs(t *testing.T) {
	spec := loadOpenAPI(t, newStack(t).serve(t))
	if v, _ := spec.doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi %q: the schemas use 3.1 (type arrays with null, const), so the document must declare 3.1.x", v)
	}
	if servers, _ := spec.doc["servers"].([]any); len(servers) == 0 {
		t.Error("no servers: clients need a base URL")
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	seen := map[string]string{}
	paths, _ := spec.doc["paths"].(map[string]any)
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item, _ := paths[path].(map[string]any)
		for _, method := range slices.Sorted(maps.Keys(item)) {
			op, ok := item[method].(map[string]any)
			if !ok || method == "parameters" {
				continue
			}
			route := strings.ToUpper(method) + " " + path
			id, _ := op["operationId"].(string)
			switch {
			case id == "":
				t.Errorf("%s has no operationId: add a camelCase one (verb first, as getItem) to its file in server/openapi/", route)
			case !camel.MatchString(id):
				t.Errorf("%s: operationId %q is not camelCase", route, id)
			case seen[id] != "":
				t.Errorf("%s: operationId %q is %s's too", route, id, seen[id])
			default:
				seen[id] = route
			}
		}
	}
}

// TestOpenAPIExamplesMatch checks every example the description gives,
// of a request body or an answer, against the schema beside it (closed as
// TestOpenAPIResponsesMatch closes them), so that an example cannot
// drift from the fields it shows.
func TestOpenAPIExamplesMatch(t *testing.T) {
	spec := loadOpenAPI(t, newStack(t).serve(t))
	n := 0
	paths, _ := spec.doc["paths"].(map[string]any)
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		item, _ := paths[path].(map[string]any)
		for _, method := range slices.Sorted(maps.Keys(item)) {
			op, ok := item[method].(map[string]any)
			if !ok {
				continue
			}
			media := map[string]any{}
			if body, ok := op["requestBody"].(map[string]any); ok {
				media["request"] = body["content"]
			}
			responses, _ := op["responses"].(map[string]any)
			for status, r := range responses {
				if r, ok := r.(map[string]any); ok {
					media[status] = r["content"]
				}
			}
			for _, where := range slices.Sorted(maps.Keys(media)) {
				content, _ := media[where].(map[string]any)
				for ct, m := range content {
					m, _ := m.(map[string]any)
					examples, _ := m["examples"].(map[string]any)
					for name, ex := range examples {
						n++
						value := ex.(map[string]any)["value"]
						resolved, err := spec.compile(m["schema"])
						if err != nil {
							t.Fatalf("%s %s %s: %v", method, path, where, err)
						}
						if err := resolved.Validate(value); err != nil {
							t.Errorf("%s %s, %s %s, example %q does not match its schema: %v%s", strings.ToUpper(method), path, where, ct, name, err, spec.undocumentedNote(m["schema"], value))
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Error("the description gives no examples")
	}
}

// badCalls are, for every route, the requests any route may be sent
// wrongly, so that each route's error answers are checked too: without a
// key (401, unless the route is public), with a method it does not serve
// (405), and, for a POST, with a body that is not JSON (400, or what
// notJSON says the route answers instead).
func badCalls(srv *server.Server) []apiCall {
	notJSON := map[string]int{
		// JSON-RPC answers a parse error in a 200 (the JSON-RPC error).
		"POST /v1/a2a/rpc": http.StatusOK,
		// The signature is checked before the body is read.
		"POST /webhook/github": http.StatusUnauthorized,
	}
	var out []apiCall
	for _, route := range srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		concrete := strings.NewReplacer("{id}", "mem-root", "{owner}", "acme", "{name}", "gateway", "{sha}", "9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d").Replace(path)
		if public, _ := srv.RouteAccess(route); !public {
			out = append(out, apiCall{name: route + " without a key", route: route, path: concrete, body: "{}", header: []string{"Authorization", ""}, status: http.StatusUnauthorized})
		}
		out = append(out, apiCall{name: route + " by PATCH", route: route, method: http.MethodPatch, path: concrete, status: http.StatusMethodNotAllowed})
		if method == http.MethodPost {
			status, ok := notJSON[route]
			if !ok {
				status = http.StatusBadRequest
			}
			out = append(out, apiCall{name: route + " with a body that is not JSON", route: route, path: concrete, body: "{", status: status})
		}
	}
	return out
}

// checkCoverage fails for a served route no call exercises with a
// successful request, and for a call naming a route the description
// lacks, saying what to add.
func checkCoverage(t *testing.T, spec openAPISpec, calls []apiCall, served []string) {
	t.Helper()
	ok := map[string]bool{}
	for _, c := range calls {
		if _, found := spec.operation(c.route); !found {
			t.Errorf("openAPICalls exercise %s, which /openapi.json does not describe: add it to a file of server/openapi/", c.route)
		}
		if c.status < 300 {
			ok[c.route] = true
		}
	}
	for _, route := range served {
		if !ok[route] {
			t.Errorf("the router serves %s, but TestOpenAPIResponsesMatch makes no successful call to it: add a call (a valid request and the status it answers) to its list, so that its answers are checked against /openapi.json", route)
		}
	}
}

// callAPI sends a request with the admin key unless the header names an
// Authorization (an empty one sends none). A stream's body is not read.
func callAPI(t *testing.T, method, url, body string, header []string, stream bool) response {
	t.Helper()
	if stream {
		return dialStream(t, url, header)
	}
	h := header
	if !slices.Contains(h, "Authorization") {
		h = append(slices.Clone(h), bearer(adminKey)...)
	}
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	var out []string
	for i := 0; i+1 < len(h); i += 2 {
		if h[i] == "Authorization" && h[i+1] == "" {
			continue
		}
		out = append(out, h[i], h[i+1])
	}
	return do(t, method, url, b, out...)
}

// savedValue reads what a call saves for later ones.
func savedValue(t *testing.T, r response, from string) string {
	t.Helper()
	if name, ok := strings.CutPrefix(from, "header:"); ok {
		if v := r.header.Get(name); v != "" {
			return v
		}
		t.Fatalf("the answer has no %s header", name)
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Split(from, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, ok := v.(string)
	if !ok || s == "" {
		t.Fatalf("the answer has no %s: %.300s", from, r.body)
	}
	return s
}

// dialStream opens the stream at url and returns its answer's head
// without reading the stream: a WebSocket handshake for ws routes
// (subscribe), else a request whose body is not read (event streams).
func dialStream(t *testing.T, url string, header []string) response {
	t.Helper()
	if !strings.Contains(url, "/v1/subscribe") {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adminKey)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		return response{status: res.StatusCode, header: res.Header}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	h := http.Header{"Authorization": {"Bearer " + adminKey}}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http"), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dialing %s: %v", url, err)
	}
	defer c.CloseNow()
	return response{status: res.StatusCode, header: res.Header}
}

// openAPISpec is /openapi.json decoded, to look up what it says of a
// route's answers.
type openAPISpec struct {
	doc map[string]any
	// allOfRefs are the component schemas some allOf extends: the schema
	// holding the allOf closes them, not they themselves.
	allOfRefs map[string]bool
}

func loadOpenAPI(t *testing.T, base string) openAPISpec {
	t.Helper()
	r := do(t, http.MethodGet, base+"/openapi.json", nil, bearer(publicKey)...)
	if r.status != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d", r.status)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	s := openAPISpec{doc: doc, allOfRefs: map[string]bool{}}
	collectAllOfRefs(doc, s.allOfRefs)
	return s
}

func collectAllOfRefs(v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if all, ok := v["allOf"].([]any); ok {
			for _, b := range all {
				if ref, ok := b.(map[string]any)["$ref"].(string); ok {
					into[strings.TrimPrefix(ref, "#/components/schemas/")] = true
				}
			}
		}
		for _, e := range v {
			collectAllOfRefs(e, into)
		}
	case []any:
		for _, e := range v {
			collectAllOfRefs(e, into)
		}
	}
}

// operation returns the operation object of a route ("GET /v1/items/{id}").
func (s openAPISpec) operation(route string) (map[string]any, bool) {
	method, path, _ := strings.Cut(route, " ")
	paths, _ := s.doc["paths"].(map[string]any)
	item, _ := paths[path].(map[string]any)
	op, ok := item[strings.ToLower(method)].(map[string]any)
	return op, ok
}

// check fails unless the description documents r's status for route and
// r's body validates against the schema it gives for r's media type.
func (s openAPISpec) check(t *testing.T, route string, r response) {
	t.Helper()
	op, _ := s.operation(route)
	responses, _ := op["responses"].(map[string]any)
	doc, ok := responses[strconv.Itoa(r.status)].(map[string]any)
	if !ok {
		t.Fatalf("%s answered %d, which /openapi.json does not document for it: add the status to its responses", route, r.status)
	}
	if ref, ok := doc["$ref"].(string); ok {
		doc = s.pointer(t, ref).(map[string]any)
	}
	content, _ := doc["content"].(map[string]any)
	ct, _, _ := strings.Cut(r.header.Get("Content-Type"), ";")
	ct = strings.TrimSpace(ct)
	if len(content) == 0 {
		// No content documented: the route says its body varies (MCP's
		// JSON or event stream) or that there is none.
		return
	}
	media, ok := content[ct].(map[string]any)
	if !ok {
		t.Fatalf("%s %d answered Content-Type %q; /openapi.json documents %v", route, r.status, ct, keysOf(content))
	}
	schema, ok := media["schema"]
	if !ok {
		return
	}
	var body any
	if ct == "application/json" {
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatalf("%s %d: the body is not JSON: %v", route, r.status, err)
		}
	} else {
		body = string(r.body)
	}
	resolved, err := s.compile(schema)
	if err != nil {
		t.Fatalf("%s %d: compiling the documented schema: %v", route, r.status, err)
	}
	if err := resolved.Validate(body); err != nil {
		t.Errorf("%s %d: the answer does not match /openapi.json (fix the handler or the description in server/openapi/): %v%s\nbody: %.2000s", route, r.status, err, s.undocumentedNote(schema, body), r.body)
	}
}

// undocumentedNote names the fields of v its schema does not list, for a
// failure message (the validator's own error does not name them).
func (s openAPISpec) undocumentedNote(schema, v any) string {
	var out []string
	s.undocumented(schema, v, "$", &out)
	if len(out) == 0 {
		return ""
	}
	return "\nfields the description does not list: " + strings.Join(out, ", ")
}

// undocumented appends to out the paths of v's object fields that the
// schema, as closeSchema closes it, does not allow. Of a oneOf or anyOf,
// the branch that leaves the fewest counts.
func (s openAPISpec) undocumented(schema, v any, at string, out *[]string) {
	sch := s.deref(schema)
	if sch == nil {
		return
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if branches, ok := sch[k].([]any); ok && len(branches) > 0 {
			var best []string
			for i, b := range branches {
				var got []string
				s.undocumented(b, v, at, &got)
				if i == 0 || len(got) < len(best) {
					best = got
				}
			}
			*out = append(*out, best...)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props := s.propertiesOf(sch)
		for _, key := range slices.Sorted(maps.Keys(v)) {
			switch addl := sch["additionalProperties"].(type) {
			case map[string]any:
				if props[key] == nil {
					s.undocumented(addl, v[key], at+"."+key, out)
					continue
				}
			case bool:
				if addl && props[key] == nil {
					continue
				}
			}
			if p, ok := props[key]; ok {
				s.undocumented(p, v[key], at+"."+key, out)
			} else if len(props) > 0 {
				*out = append(*out, at+"."+key)
			}
		}
	case []any:
		if items, ok := sch["items"]; ok {
			for i, e := range v {
				s.undocumented(items, e, fmt.Sprintf("%s[%d]", at, i), out)
			}
		}
	}
}

// deref follows a schema's $ref to the component it names.
func (s openAPISpec) deref(schema any) map[string]any {
	m, _ := schema.(map[string]any)
	for range 16 {
		ref, ok := m["$ref"].(string)
		if !ok {
			break
		}
		comps, _ := s.doc["components"].(map[string]any)
		schemas, _ := comps["schemas"].(map[string]any)
		m, _ = schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
	}
	return m
}

// propertiesOf is a schema's properties with those of its allOf branches.
func (s openAPISpec) propertiesOf(sch map[string]any) map[string]any {
	out := map[string]any{}
	if props, ok := sch["properties"].(map[string]any); ok {
		maps.Copy(out, props)
	}
	if all, ok := sch["allOf"].([]any); ok {
		for _, b := range all {
			maps.Copy(out, s.propertiesOf(s.deref(b)))
		}
	}
	return out
}

// pointer returns the part of the document a local $ref names.
func (s openAPISpec) pointer(t *testing.T, ref string) any {
	t.Helper()
	var v any = s.doc
	for _, seg := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("$ref %s does not resolve", ref)
		}
		v = m[seg]
	}
	if v == nil {
		t.Fatalf("$ref %s does not resolve", ref)
	}
	return v
}

// compile turns a response schema into a JSON Schema 2020-12 document:
// the component schemas become its $defs, and every object schema that
// lists properties is closed (unevaluatedProperties: false).
func (s openAPISpec) compile(schema any) (*jsonschema.Resolved, error) {
	comps, _ := s.doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	defs := map[string]any{}
	for name, sch := range schemas {
		defs[name] = closeSchema(rewriteRefs(sch), s.allOfRefs[name])
	}
	root, ok := closeSchema(rewriteRefs(schema), false).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the schema is not an object")
	}
	root["$defs"] = defs
	b, err := json.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("encoding the schema: %w", err)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		return nil, fmt.Errorf("decoding the schema: %w", err)
	}
	return js.Resolve(nil)
}

// rewriteRefs copies v with #/components/schemas/X references made
// #/$defs/X.
func rewriteRefs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if ref, ok := e.(string); ok && k == "$ref" {
				out[k] = strings.Replace(ref, "#/components/schemas/", "#/$defs/", 1)
				continue
			}
			out[k] = rewriteRefs(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = rewriteRefs(e)
		}
		return out
	}
	return v
}

// closeSchema closes, in place, every object schema under v that lists
// properties and says nothing of others; an allOf branch is left open,
// and the schema holding the allOf is closed instead.
func closeSchema(v any, branch bool) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	for _, k := range []string{"properties", "patternProperties", "$defs"} {
		if props, ok := m[k].(map[string]any); ok {
			for name, p := range props {
				props[name] = closeSchema(p, false)
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "unevaluatedProperties"} {
		if sub, ok := m[k]; ok {
			m[k] = closeSchema(sub, false)
		}
	}
	for _, k := range []string{"oneOf", "anyOf", "prefixItems"} {
		if list, ok := m[k].([]any); ok {
			for i, sub := range list {
				list[i] = closeSchema(sub, false)
			}
		}
	}
	all, hasAll := m["allOf"].([]any)
	for i, sub := range all {
		all[i] = closeSchema(sub, true)
	}
	_, hasProps := m["properties"]
	_, hasAdditional := m["additionalProperties"]
	_, hasUnevaluated := m["unevaluatedProperties"]
	if (hasProps || hasAll) && !hasAdditional && !hasUnevaluated && !branch {
		m["unevaluatedProperties"] = false
	}
	return m
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
