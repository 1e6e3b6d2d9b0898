package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
)

// upstreamServer is another MCP server, built with the SDK and served
// over streamable HTTP on loopback, with one tool, think.
func upstreamServer(t *testing.T) string {
	t.Helper()
	type in struct {
		Content string `json:"content"`
	}
	type out struct {
		ThoughtID string `json:"thought_id"`
	}
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "think", Description: "think about a problem"},
		func(_ context.Context, _ *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, out, error) {
			return nil, out{ThoughtID: "th-1"}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMCPUpstreamFromConfig: with H4R_MCP_UPSTREAM_URL set, h4r mcp
// re-exposes the upstream server's tools under the prefix and enriches
// their results with the context bridge; without it there are none.
func TestMCPUpstreamFromConfig(t *testing.T) {
	url := upstreamServer(t)
	cases := []struct {
		name     string
		vars     map[string]string
		wantTool string // "" : no upstream tool
	}{
		{"upstream by URL", map[string]string{"H4R_MCP_UPSTREAM_URL": url}, "upstream_think"},
		{"own prefix", map[string]string{"H4R_MCP_UPSTREAM_URL": url, "H4R_MCP_UPSTREAM_PREFIX": "ext_"}, "ext_think"},
		{"no upstream", map[string]string{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			storeTrajectory(t, dir)
			vars := map[string]string{"H4R_DATA_DIR": dir, "H4R_LOG_LEVEL": "error", "H4R_BRIDGE_ENABLED": "true"}
			for k, v := range tc.vars {
				vars[k] = v
			}
			cs := startMCP(t, vars)
			listed, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range listed.Tools {
				names = append(names, tool.Name)
			}
			if tc.wantTool == "" {
				if slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, "think") }) {
					t.Errorf("tools %v without an upstream", names)
				}
				return
			}
			if !slices.Contains(names, tc.wantTool) {
				t.Fatalf("tools %v, want %s", names, tc.wantTool)
			}
			text, isErr := callText(t, cs, tc.wantTool, map[string]any{"content": "How to optimize database queries"})
			if isErr || !strings.Contains(text, "th-1") || !strings.Contains(text, `"context_bridge"`) || !strings.Contains(text, "t-db") {
				t.Errorf("%s answered %s (error %v), want the upstream's result and a context_bridge matching t-db", tc.wantTool, text, isErr)
			}
		})
	}
}

// storeTrajectory writes one trajectory into the store in dir.
func storeTrajectory(t *testing.T, dir string) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = dir
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	tr := bridge.Trajectory{ID: "t-db", SessionID: "s1", Description: "How to optimize database queries", Domain: "engineering",
		ToolSequence: []string{"think"}, SuccessScore: 0.9, QualityScore: 0.8}
	if _, err := a.Store.Upsert(t.Context(), []h4r.Item{tr.Item()}); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}
