package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/h4r/h4r"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// keyTransport adds a bearer key to every request of the MCP client.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the SDK's client to /mcp on loopback with key.
func mcpSession(t *testing.T, base, key string) (*mcp.ClientSession, error) {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{key}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), transport, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func toolText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
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

// TestMCPOverHTTP: the SDK's client over /mcp on loopback, with the same
// bearer keys as the REST routes. An admin key writes an ops-only memory;
// a public key reads the same scope and never gets it, nor the pack's
// restricted items; a read-only key may not write; no key is refused.
func TestMCPOverHTTP(t *testing.T) {
	base := newAuthStack(t).serve(t)
	if _, err := mcpSession(t, base, ""); err == nil {
		t.Fatal("an MCP session opened without a key")
	}
	admin, err := mcpSession(t, base, adminKey)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := admin.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 5 {
		t.Fatalf("tools/list: %v, %d tools", err, len(tools.Tools))
	}
	scope := map[string]any{"session_id": "s-ops", "agent_id": "agent-ops"}
	for _, m := range []map[string]any{
		{"scope": scope, "type": "fix", "payload": map[string]any{"summary": "open note"}},
		{"scope": scope, "type": "decision", "payload": map[string]any{"summary": "ops-only-zq runbook"}, "restricted_to_groups": []string{"ops"}},
	} {
		if text, isErr := toolText(t, admin, "memory_write", m); isErr {
			t.Fatalf("memory_write: %s", text)
		}
	}
	text, _ := toolText(t, admin, "memory_read", map[string]any{"scope": scope})
	if !strings.Contains(text, "ops-only-zq") {
		t.Fatalf("precondition: the admin key must read the ops-only memory: %s", text)
	}

	public, err := mcpSession(t, base, publicKey)
	if err != nil {
		t.Fatal(err)
	}
	text, isErr := toolText(t, public, "memory_read", map[string]any{"scope": scope})
	var r struct {
		Items []struct {
			Type string `json:"type"`
		} `json:"items"`
	}
	if isErr || json.Unmarshal([]byte(text), &r) != nil || len(r.Items) != 1 || r.Items[0].Type != "fix" {
		t.Errorf("public memory_read = %s, want the open note only", text)
	}
	if strings.Contains(text, "ops-only-zq") {
		t.Errorf("the ops-only memory reached a public key over MCP: %s", text)
	}
	for _, s := range secrets {
		packText, isErr := toolText(t, public, "context_pack", map[string]any{"query": map[string]any{"text": "login checkout selector password"}, "compact": false})
		if isErr {
			t.Fatalf("context_pack: %s", packText)
		}
		if strings.Contains(packText, s) {
			t.Errorf("the pack of a public key holds %q", s)
		}
	}
	text, isErr = toolText(t, public, "memory_write", map[string]any{"scope": scope, "type": "fix", "payload": map[string]any{}})
	if !isErr || !strings.Contains(text, "permission_denied") {
		t.Errorf("a read-only key wrote over MCP: %s", text)
	}
}

// TestMCPRateLimit: every request to /mcp counts against the key's rate
// limit like any route (slow-key: 2 a minute), in a bucket of its own, so
// that a key flooding /mcp is refused with 429 and Retry-After while its
// REST requests and other keys go on. Before, /mcp was not limited.
func TestMCPRateLimit(t *testing.T) {
	base := newAuthStack(t).serve(t)
	initialize := []byte(`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`)
	mcpHeaders := func(key string) []string {
		return append(bearer(key), "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	}
	steps := []struct {
		name   string
		path   string
		body   []byte
		header []string
		status int
	}{
		{"first MCP request", "/mcp", initialize, mcpHeaders(slowKey), http.StatusOK},
		{"second MCP request", "/mcp", initialize, mcpHeaders(slowKey), http.StatusOK},
		{"third is refused", "/mcp", initialize, mcpHeaders(slowKey), http.StatusTooManyRequests},
		{"the key's REST reads have their own bucket", "/v1/context-pack", []byte(`{"query": {"text": "login"}}`), bearer(slowKey), http.StatusOK},
		{"another key is not limited", "/mcp", initialize, mcpHeaders(healerKey), http.StatusOK},
	}
	for _, s := range steps {
		r := do(t, http.MethodPost, base+s.path, s.body, s.header...)
		if r.status != s.status {
			t.Fatalf("%s: status %d, want %d: %s", s.name, r.status, s.status, r.body)
		}
		if r.status != http.StatusTooManyRequests {
			continue
		}
		if e := errorOf(t, s.path, r); e.Code != h4r.EEXHAUSTED || !strings.Contains(e.Message, "mcp") {
			t.Errorf("%s: %+v, want resource_exhausted naming mcp", s.name, e)
		}
		if got := r.header.Get("Retry-After"); got != "30" {
			t.Errorf("%s: Retry-After %q, want 30", s.name, got)
		}
	}
}

// TestMCPRefusalsAreJSON: what the MCP transport refuses (a session used
// with another key, an unknown session, a missing Accept) is answered in
// the one error shape with the transport's status, never plain text.
func TestMCPRefusalsAreJSON(t *testing.T) {
	base := newAuthStack(t).serve(t)
	initialize := []byte(`{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}`)
	list := []byte(`{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}`)
	headers := func(key string, more ...string) []string {
		return append(append(bearer(key), "Content-Type", "application/json", "Accept", "application/json, text/event-stream"), more...)
	}
	opened := do(t, http.MethodPost, base+"/mcp", initialize, headers(adminKey)...)
	session := opened.header.Get("Mcp-Session-Id")
	if opened.status != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s, session %q", opened.status, opened.body, session)
	}
	tests := []struct {
		name    string
		header  []string
		status  int
		code    string
		message string
	}{
		{"the session of another key", headers(publicKey, "Mcp-Session-Id", session, "Mcp-Protocol-Version", "2025-06-18"), http.StatusForbidden, h4r.EFORBIDDEN, "opened with another API key"},
		{"an unknown session", headers(adminKey, "Mcp-Session-Id", "no-such-session", "Mcp-Protocol-Version", "2025-06-18"), http.StatusNotFound, h4r.ENOTFOUND, "session not found"},
		{"no event stream accepted", append(bearer(adminKey), "Content-Type", "application/json", "Accept", "application/json"), http.StatusBadRequest, h4r.EINVALID, "text/event-stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, http.MethodPost, base+"/mcp", list, tt.header...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON: %s", ct, r.body)
			}
			if e := errorOf(t, "/mcp", r); e.Code != tt.code || !strings.Contains(e.Message, tt.message) {
				t.Errorf("%+v, want %s with a message holding %q", e, tt.code, tt.message)
			}
		})
	}
}
