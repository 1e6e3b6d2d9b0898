package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
)

// startMCP runs h4r mcp as main runs it, over pipes for its stdin and
// stdout, and connects the SDK's client to them: the stdio transport as a
// desktop agent uses it.
func startMCP(t *testing.T, vars map[string]string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"mcp"}, args...), inR, outW, io.Discard, env(vars))
		_ = outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connecting to h4r mcp: %v (exit: %v)", err, <-done)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = inW.Close()
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("h4r mcp: %v", err)
		}
	})
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String(), res.IsError
}

// TestMCPStdio is a first MCP session as a new user has it: start h4r
// mcp, list the tools, write a memory and read it back, and get a pack.
func TestMCPStdio(t *testing.T) {
	// A generous write deadline: loading the demo corpus under -race on a
	// loaded machine took longer than the default 5 s.
	cs := startMCP(t, map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "error", "H4R_WRITE_TIMEOUT_MS": "600000"}, "--demo")
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = tool.InputSchema != nil
	}
	for _, want := range []string{"context_pack", "memory_write", "memory_read", "memory_link", "memory_stats"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s with a schema: %v", want, names)
		}
	}
	scope := map[string]any{"session_id": "s1", "agent_id": "desktop"}
	if text, isErr := callText(t, cs, "memory_write", map[string]any{"scope": scope, "type": "convention", "payload": map[string]any{"rule": "tabs, not spaces"}}); isErr {
		t.Fatalf("memory_write: %s", text)
	}
	text, isErr := callText(t, cs, "memory_read", map[string]any{"scope": scope})
	if isErr || !strings.Contains(text, "tabs, not spaces") {
		t.Errorf("memory_read: %s", text)
	}
	text, isErr = callText(t, cs, "context_pack", map[string]any{"query": map[string]any{"text": "login test failures"}})
	var p struct {
		Results []struct{ ID string } `json:"results"`
	}
	if isErr || json.Unmarshal([]byte(text), &p) != nil || len(p.Results) == 0 {
		t.Errorf("context_pack over the demo corpus: %.300s", text)
	}
}

// TestMCPStdioPrincipal: H4R_MCP_API_KEY gives h4r mcp its principal's
// clearance and classes: a read-only key may not write, and a key not in
// the keys file stops the command naming the variable.
func TestMCPStdioPrincipal(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	entry := []map[string]any{{"sha256": auth.Hash("reader-key"), "routes": []string{"read"},
		"principal": map[string]any{"id": "reader", "type": "specialist", "securityLevel": "public", "authorizedGroups": []string{}}}}
	b, _ := json.Marshal(entry)
	if err := os.WriteFile(keys, b, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "error", "H4R_API_KEYS_FILE": keys, "H4R_MCP_API_KEY": "reader-key"}
	cs := startMCP(t, vars)
	text, isErr := callText(t, cs, "memory_write", map[string]any{"scope": map[string]any{"session_id": "s", "agent_id": "a"}, "type": "fix", "payload": map[string]any{}})
	if !isErr || !strings.Contains(text, "permission_denied") {
		t.Errorf("a read-only principal wrote over stdio: %s", text)
	}

	vars["H4R_MCP_API_KEY"] = "not-a-key"
	err := run(context.Background(), []string{"mcp"}, strings.NewReader(""), io.Discard, io.Discard, env(vars))
	if e, ok := err.(*h4r.Error); !ok || e.Field != "H4R_MCP_API_KEY" {
		t.Errorf("an unknown H4R_MCP_API_KEY: %v, want an error naming it", err)
	}
}
