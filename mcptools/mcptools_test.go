package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/mcptools"
)

// openApp is app.Open over a fresh embedded store with the bundled policy.
func openApp(t *testing.T) *app.App {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	a, err := app.Open(context.Background(), cfg, app.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// openRegistry is the registry as the CLI builds it, over app.Open's
// SQLite store, bundled policy and engine, with two items.
func openRegistry(t *testing.T) *mcptools.Registry {
	t.Helper()
	ctx := context.Background()
	a := openApp(t)
	_, err := a.Store.Upsert(ctx, []h4r.Item{
		{ID: "runbook-login", Kind: "runbook", Text: "The login selector changed to #sign-in in deploy 812."},
		{ID: "secret-login", Kind: "note", Text: "The login admin password is hunter2.", Metadata: h4r.Metadata{RestrictedToGroups: []string{"ops"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := mcptools.NewRegistry("h4r", "test")
	mcptools.Standard(r, mcptools.Deps{Packer: a.Engine, Memory: a.Memory, Items: a.Store.Count,
		Policy: func() any { return a.Policy.Status() }})
	return r
}

// connect runs the registry for caller on one end of an in-memory
// transport and returns an SDK client session on the other.
func connect(t *testing.T, r *mcptools.Registry, caller mcptools.Caller) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	serverT, clientT := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, serverT, caller) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

func publicCaller() mcptools.Caller {
	return mcptools.CallerOf(&auth.Principal{Specialist: h4r.Specialist{ID: "desk", Type: "specialist", SecurityLevel: h4r.Public, AuthorizedGroups: []string{}},
		Routes: []auth.Route{auth.RouteRead, auth.RouteIngest}})
}

// call calls a tool and returns its result's text, failing on a protocol
// error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

func TestToolsList(t *testing.T) {
	cs := connect(t, openRegistry(t), publicCaller())
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]map[string]any{}
	for _, tool := range res.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		schemas[tool.Name] = s
	}
	for name, required := range map[string][]string{
		"context_pack": {"query"}, "memory_write": {"scope", "type", "payload"}, "memory_read": {"scope"},
		"memory_link": {"memory_id", "related", "relation"}, "memory_stats": {"scope"},
	} {
		s, ok := schemas[name]
		if !ok {
			t.Errorf("tools/list lacks %s (has %v)", name, keys(schemas))
			continue
		}
		props, _ := s["properties"].(map[string]any)
		if s["type"] != "object" || len(props) == 0 {
			t.Errorf("%s: input schema %v, want an object with properties", name, s)
		}
		var got []string
		for _, r := range s["required"].([]any) {
			got = append(got, r.(string))
		}
		slices.Sort(got)
		if !slices.Equal(got, slices.Sorted(slices.Values(required))) {
			t.Errorf("%s: required %v, want %v", name, got, required)
		}
	}
	rs, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range rs.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Equal(uris, []string{"h4r://stats"}) {
		t.Errorf("resources %v, want h4r://stats (h4r://policy is for admin keys)", uris)
	}
}

// TestResourcesListedToReaders: a resource is listed only to callers who
// may read it, and reading one the caller may not is the JSON-RPC error
// of a resource that does not exist (-32602), as for an unknown URI; a
// protocol error never has code 0.
func TestResourcesListedToReaders(t *testing.T) {
	admin := mcptools.CallerOf(&auth.Principal{Specialist: h4r.Anonymous(), Routes: []auth.Route{auth.RouteRead, auth.RouteAdmin}})
	tests := []struct {
		name       string
		caller     mcptools.Caller
		listed     []string
		policyCode int64 // of reading h4r://policy; 0: it reads
	}{
		{"read and ingest key", publicCaller(), []string{"h4r://stats"}, jsonrpc.CodeInvalidParams},
		{"admin key", admin, []string{"h4r://policy", "h4r://stats"}, 0},
		{"no keys configured", mcptools.CallerOf(nil), []string{"h4r://policy", "h4r://stats"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := connect(t, openRegistry(t), tt.caller)
			rs, err := cs.ListResources(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, r := range rs.Resources {
				uris = append(uris, r.URI)
			}
			slices.Sort(uris)
			if !slices.Equal(uris, tt.listed) {
				t.Errorf("resources/list = %v, want %v", uris, tt.listed)
			}
			for _, uri := range []string{"h4r://policy", "h4r://nope"} {
				_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
				want := tt.policyCode
				if uri == "h4r://nope" {
					want = jsonrpc.CodeInvalidParams
				}
				var code int64
				if rerr, ok := errors.AsType[*jsonrpc.Error](err); ok {
					code = rerr.Code
				} else if err != nil {
					t.Fatalf("reading %s: %v, not a JSON-RPC error", uri, err)
				}
				if code != want {
					t.Errorf("reading %s: error %v (code %d), want code %d", uri, err, code, want)
				}
			}
		})
	}
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestMemoryWriteThenRead(t *testing.T) {
	cs := connect(t, openRegistry(t), publicCaller())
	text, isErr := call(t, cs, "memory_write", map[string]any{
		"scope": map[string]any{"session_id": "s1", "agent_id": "desk"}, "type": "fix",
		"payload": map[string]any{"summary": "use #sign-in"}, "tags": []string{"login"}})
	if isErr {
		t.Fatalf("memory_write: %s", text)
	}
	var w struct {
		MemoryID string `json:"memory_id"`
	}
	if err := json.Unmarshal([]byte(text), &w); err != nil || w.MemoryID == "" {
		t.Fatalf("memory_write answered %s", text)
	}
	text, isErr = call(t, cs, "memory_read", map[string]any{"scope": map[string]any{"session_id": "s1"}})
	var r struct {
		Items []struct {
			ID      string         `json:"id"`
			Type    string         `json:"type"`
			Payload map[string]any `json:"payload"`
		} `json:"items"`
	}
	if isErr || json.Unmarshal([]byte(text), &r) != nil || len(r.Items) != 1 || r.Items[0].ID != w.MemoryID ||
		r.Items[0].Type != "fix" || r.Items[0].Payload["summary"] != "use #sign-in" {
		t.Fatalf("memory_read answered %s, want the memory written", text)
	}
	text, isErr = call(t, cs, "memory_stats", map[string]any{"scope": map[string]any{"agent_id": "desk"}})
	if isErr || !strings.Contains(text, `"fix":1`) {
		t.Errorf("memory_stats answered %s", text)
	}
}

func TestContextPack(t *testing.T) {
	cs := connect(t, openRegistry(t), publicCaller())
	text, isErr := call(t, cs, "context_pack", map[string]any{"query": map[string]any{"text": "login selector"}})
	var p mcptools.CompactPack
	if isErr || json.Unmarshal([]byte(text), &p) != nil {
		t.Fatalf("context_pack answered %s", text)
	}
	var ids []string
	for _, r := range p.Results {
		ids = append(ids, r.ID)
	}
	if !slices.Contains(ids, "runbook-login") || p.TLDR == "" || p.Status == "" {
		t.Errorf("compact pack %+v, want runbook-login and a TL;DR", p)
	}
	if slices.Contains(ids, "secret-login") || strings.Contains(text, "hunter2") {
		t.Errorf("the public caller got the ops-only item: %s", text)
	}
	text, isErr = call(t, cs, "context_pack", map[string]any{"query": map[string]any{"text": "login selector"}, "compact": false})
	var full h4r.Pack
	if isErr || json.Unmarshal([]byte(text), &full) != nil || len(full.Explainability.Items) == 0 {
		t.Errorf("context_pack compact=false answered %.300s, want the whole pack", text)
	}
}

// TestBadArguments: arguments failing a tool's schema, or its own checks,
// are tool errors naming the argument, never protocol errors.
func TestBadArguments(t *testing.T) {
	cs := connect(t, openRegistry(t), publicCaller())
	tests := []struct {
		name, tool string
		args       map[string]any
		names      string
	}{
		{"missing scope", "memory_write", map[string]any{"type": "fix", "payload": map[string]any{}}, `"field":"scope"`},
		{"payload not an object", "memory_write", map[string]any{"scope": map[string]any{"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": "x"}, `"field":"payload"`},
		{"unknown argument", "memory_read", map[string]any{"scope": map[string]any{}, "verbose": true}, `"field":"verbose"`},
		{"unknown nested argument", "memory_read", map[string]any{"scope": map[string]any{"branch": "main"}}, `"field":"scope.branch"`},
		{"nested argument of the wrong type", "memory_write", map[string]any{"scope": map[string]any{"session_id": 7, "agent_id": "a"}, "type": "fix", "payload": map[string]any{}}, `"field":"scope.session_id"`},
		{"limit of the wrong type", "memory_read", map[string]any{"scope": map[string]any{}, "limit": "ten"}, `"field":"limit"`},
		{"query text of the wrong type", "context_pack", map[string]any{"query": map[string]any{"text": 3}}, `"field":"query.text"`},
		{"missing session_id", "memory_write", map[string]any{"scope": map[string]any{"agent_id": "a"}, "type": "fix", "payload": map[string]any{}}, `"field":"scope.session_id"`},
		{"limit out of range", "memory_read", map[string]any{"scope": map[string]any{}, "limit": 1000}, `"field":"limit"`},
		{"empty query", "context_pack", map[string]any{"query": map[string]any{"text": ""}}, `"field":"query.text"`},
		{"two link targets", "memory_link", map[string]any{"memory_id": "m", "relation": "r", "related": map[string]any{"file_path": "a", "commit_sha": "b"}}, `"field":"related"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := call(t, cs, tt.tool, tt.args)
			if !isErr || !strings.Contains(text, tt.names) || !strings.HasPrefix(text, `{"error":{"code":"invalid_argument"`) {
				t.Errorf("%s(%v) = %s (isError %v), want a tool error naming %s", tt.tool, tt.args, text, isErr, tt.names)
			}
		})
	}
}

// TestToolClasses: a read-only key may not write memories over MCP, and
// only admin keys read the policy resource.
func TestToolClasses(t *testing.T) {
	readOnly := mcptools.CallerOf(&auth.Principal{Specialist: h4r.Anonymous(), Routes: []auth.Route{auth.RouteRead}})
	cs := connect(t, openRegistry(t), readOnly)
	text, isErr := call(t, cs, "memory_write", map[string]any{"scope": map[string]any{"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": map[string]any{}})
	if !isErr || !strings.Contains(text, "permission_denied") {
		t.Errorf("a read-only key wrote a memory: %s", text)
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "h4r://policy"}); err == nil {
		t.Error("a read key read the policy resource")
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "h4r://stats"})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, `"items":2`) {
		t.Errorf("h4r://stats: %v %+v", err, res)
	}
}

// TestResourceReadFailures: a read that fails is a JSON-RPC error with a
// code the spec defines; an internal failure's text is logged, never sent
// (an *h4r.Error's message is).
func TestResourceReadFailures(t *testing.T) {
	var logged strings.Builder
	r := mcptools.NewRegistry("h4r", "test")
	r.SetLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	r.AddResource("h4r://internal", "internal", "fails inside", auth.RouteRead,
		func(context.Context, mcptools.Caller) (any, error) {
			return nil, errors.New("opening /var/lib/h4r-secret/h4r.db: disk I/O error")
		})
	r.AddResource("h4r://busy", "busy", "fails with a reason", auth.RouteRead,
		func(context.Context, mcptools.Caller) (any, error) {
			return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the store is busy; retry")
		})
	cs := connect(t, r, publicCaller())
	tests := []struct {
		uri, message, hidden string
	}{
		{"h4r://internal", "internal error", "h4r-secret"},
		{"h4r://busy", "the store is busy; retry", ""},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: tt.uri})
			rerr, ok := errors.AsType[*jsonrpc.Error](err)
			if !ok || rerr.Code != jsonrpc.CodeInternalError || !strings.Contains(rerr.Message, tt.message) ||
				tt.hidden != "" && strings.Contains(err.Error()+string(rerr.Data), tt.hidden) {
				t.Fatalf("reading %s: %v, want code %d saying %q and not %q", tt.uri, err, jsonrpc.CodeInternalError, tt.message, tt.hidden)
			}
		})
	}
	if !strings.Contains(logged.String(), "h4r-secret") {
		t.Errorf("the internal failure was not logged: %q", logged.String())
	}
}
