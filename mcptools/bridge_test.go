package mcptools_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/mcptools"
)

// openBridgeRegistry is a registry holding context_bridge over openBridge.
func openBridgeRegistry(t *testing.T) *mcptools.Registry {
	t.Helper()
	r := mcptools.NewRegistry("h4r", "test")
	mcptools.AddBridge(r, openBridge(t))
	return r
}

// openBridge is the bridge app.Bridge builds (enabled), with an open
// trajectory and one only ops may see.
func openBridge(t *testing.T) *bridge.Bridge {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.BridgeEnabled = true
	a, err := app.Open(context.Background(), cfg, app.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	open := bridge.Trajectory{ID: "t-open", SessionID: "s1", Description: "How to optimize database queries", Domain: "engineering",
		ToolSequence: []string{"think"}, SuccessScore: 0.9, QualityScore: 0.8}.Item()
	secret := bridge.Trajectory{ID: "t-ops", SessionID: "s2", Description: "How to optimize database queries fast", Domain: "engineering",
		ToolSequence: []string{"think"}, SuccessScore: 0.9, QualityScore: 0.8}.Item()
	secret.Metadata.RestrictedToGroups = []string{"ops"}
	if _, err := a.Store.Upsert(t.Context(), []h4r.Item{open, secret}); err != nil {
		t.Fatal(err)
	}
	b, err := a.Bridge(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func opsCaller() mcptools.Caller {
	return mcptools.CallerOf(&auth.Principal{Specialist: h4r.Specialist{ID: "lead", Type: "specialist", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{"ops"}},
		Routes: []auth.Route{auth.RouteRead}})
}

// TestBridgeTool: context_bridge over the SDK's client answers document
// 001's block through the policy (a public key never gets the ops-only
// trajectory, an ops key does), returns the result unchanged, leaves the
// block out for a tool off the allow-list, refuses an ingest-only key, and
// turns arguments failing the schema into a tool error naming the argument.
func TestBridgeTool(t *testing.T) {
	r := openBridgeRegistry(t)
	ops := opsCaller()
	ingestOnly := mcptools.CallerOf(&auth.Principal{Specialist: h4r.Anonymous(), Routes: []auth.Route{auth.RouteIngest}})
	call1 := map[string]any{"tool": "think", "params": map[string]any{"content": "How to optimize database queries", "domain": "engineering"},
		"result": map[string]any{"thought_id": "th-1"}}
	tests := []struct {
		name    string
		caller  mcptools.Caller
		args    map[string]any
		isErr   bool
		want    []string // trajectory ids, best first; nil: no context_bridge
		wantErr string
	}{
		{name: "public key", caller: publicCaller(), args: call1, want: []string{"t-open"}},
		{name: "ops key", caller: ops, args: call1, want: []string{"t-open", "t-ops"}},
		{name: "tool off the allow-list", caller: ops, args: map[string]any{"tool": "rm", "params": map[string]any{"content": "optimize database queries"}}},
		{name: "ingest-only key", caller: ingestOnly, args: call1, isErr: true, wantErr: "permission_denied"},
		{name: "params not an object", caller: publicCaller(), args: map[string]any{"tool": "think", "params": "text"}, isErr: true, wantErr: "params"},
		{name: "no tool", caller: publicCaller(), args: map[string]any{"params": map[string]any{}}, isErr: true, wantErr: "tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := call(t, connect(t, r, tt.caller), "context_bridge", tt.args)
			if isErr != tt.isErr {
				t.Fatalf("isError %v, want %v: %s", isErr, tt.isErr, text)
			}
			if tt.isErr {
				if !strings.Contains(text, tt.wantErr) {
					t.Errorf("error %s, want it to name %q", text, tt.wantErr)
				}
				return
			}
			var resp bridge.Response
			if err := json.Unmarshal([]byte(text), &resp); err != nil {
				t.Fatalf("%v: %s", err, text)
			}
			if tt.want == nil {
				if resp.ContextBridge != nil {
					t.Errorf("context_bridge = %+v, want none", resp.ContextBridge)
				}
				return
			}
			if m, _ := resp.Result.(map[string]any); m["thought_id"] != "th-1" {
				t.Errorf("result %v, want it unchanged", resp.Result)
			}
			var got []string
			for _, m := range resp.ContextBridge.Matches {
				got = append(got, m.TrajectoryID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("matches %v, want %v (%s)", got, tt.want, text)
			}
		})
	}
}
