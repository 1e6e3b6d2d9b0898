package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/mcptools"
)

type thinkIn struct {
	Content string `json:"content"`
	Domain  string `json:"domain,omitempty"`
}

type thinkOut struct {
	ThoughtID string `json:"thought_id"`
}

// upstreamSession is another MCP server, built with the SDK in this
// process and served over streamable HTTP on loopback, and an SDK client
// session to it: think (on the bridge's allow-list), echo (not on it) and
// fail (a tool error).
func upstreamSession(t *testing.T) *mcp.ClientSession {
	t.Helper()
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "think", Description: "think about a problem"},
		func(_ context.Context, _ *mcp.CallToolRequest, in thinkIn) (*mcp.CallToolResult, thinkOut, error) {
			return nil, thinkOut{ThoughtID: "th-" + in.Content[:3]}, nil
		})
	mcp.AddTool(up, &mcp.Tool{Name: "echo", Description: "say it back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in thinkIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Content}}}, nil, nil
		})
	mcp.AddTool(up, &mcp.Tool{Name: "fail", Description: "always fails"},
		func(_ context.Context, _ *mcp.CallToolRequest, in thinkIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("upstream says no")
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "h4r", Version: "test"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestUpstreamMiddleware: H4R as an MCP client of another server
// re-exposes its tools (prefixed, with their schemas), forwards calls, and
// attaches the context bridge's block for the caller's key: a public key
// never gets the ops-only trajectory, an ops key does; a tool off the
// allow-list and an upstream tool error pass through unchanged; a key
// without the read class is refused before the upstream is called.
func TestUpstreamMiddleware(t *testing.T) {
	r := mcptools.NewRegistry("h4r", "test")
	names, err := mcptools.AddUpstream(t.Context(), r, upstreamSession(t), mcptools.UpstreamOptions{Prefix: "up_", Bridge: openBridge(t)})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"up_echo", "up_fail", "up_think"}) {
		t.Fatalf("exposed %v", names)
	}
	listed, err := connect(t, r, publicCaller()).ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range listed.Tools {
		if tool.Name == "up_think" {
			if b, _ := json.Marshal(tool.InputSchema); !strings.Contains(string(b), `"required":["content"]`) {
				t.Errorf("up_think's schema %s, want the upstream's (content required)", b)
			}
		}
	}
	ingestOnly := mcptools.CallerOf(&auth.Principal{Specialist: h4r.Anonymous(), Routes: []auth.Route{auth.RouteIngest}})
	problem := map[string]any{"content": "How to optimize database queries", "domain": "engineering"}
	tests := []struct {
		name    string
		caller  mcptools.Caller
		tool    string
		isErr   bool
		text    string   // in the upstream's own content
		matches []string // nil: no context_bridge attached
	}{
		{name: "public key", caller: publicCaller(), tool: "up_think", text: `"thought_id":"th-How"`, matches: []string{"t-open"}},
		{name: "ops key", caller: opsCaller(), tool: "up_think", text: `"thought_id":"th-How"`, matches: []string{"t-open", "t-ops"}},
		{name: "off the allow-list", caller: opsCaller(), tool: "up_echo", text: "How to optimize database queries"},
		{name: "upstream tool error", caller: opsCaller(), tool: "up_fail", isErr: true, text: "upstream says no"},
		{name: "ingest-only key", caller: ingestOnly, tool: "up_think", isErr: true, text: "permission_denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := connect(t, r, tt.caller).CallTool(t.Context(), &mcp.CallToolParams{Name: tt.tool, Arguments: problem})
			if err != nil {
				t.Fatalf("a protocol error: %v", err)
			}
			if res.IsError != tt.isErr || len(res.Content) == 0 {
				t.Fatalf("isError %v, want %v: %+v", res.IsError, tt.isErr, res.Content)
			}
			if first := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(first, tt.text) {
				t.Errorf("first content %s, want it to hold %s", first, tt.text)
			}
			_, inMeta := res.Meta["context_bridge"]
			if tt.matches == nil {
				if len(res.Content) != 1 || inMeta {
					t.Errorf("context attached to %s: %+v %v", tt.tool, res.Content, res.Meta)
				}
				return
			}
			if len(res.Content) != 2 || !inMeta {
				t.Fatalf("want the upstream's content and the context_bridge block: %+v, meta %v", res.Content, res.Meta)
			}
			var got struct {
				ContextBridge bridge.Block `json:"context_bridge"`
			}
			if err := json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &got); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range got.ContextBridge.Matches {
				ids = append(ids, m.TrajectoryID)
			}
			if !slices.Equal(ids, tt.matches) || got.ContextBridge.Version != bridge.Version {
				t.Errorf("matches %v, want %v: %+v", ids, tt.matches, got.ContextBridge)
			}
			if sc, _ := res.StructuredContent.(map[string]any); sc["thought_id"] != "th-How" {
				t.Errorf("structured content %v, want the upstream's unchanged", res.StructuredContent)
			}
		})
	}
}
