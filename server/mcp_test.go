package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

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
