package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
)

// bridgeStack is the real stack behind keys with a context bridge over
// its engine.
func bridgeStack(t *testing.T, enabled bool) string {
	t.Helper()
	return bridgeStackOver(t, enabled, nil)
}

// bridgeStackOver is bridgeStack with the bridge reading source (nil: the
// engine).
func bridgeStackOver(t *testing.T, enabled bool, source bridge.Source) string {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	bc := bridge.DefaultConfig()
	bc.Enabled = enabled
	if source == nil {
		source = bridge.EngineSource{Packer: a.Engine}
	}
	b, err := bridge.New(bc, source, bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{srv: server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithAuthenticator(keys), server.WithClock(clock), server.WithBridge(b)), store: a.Store}
	return s.serve(t)
}

type bridgeAnswer struct {
	Result        json.RawMessage `json:"result"`
	ContextBridge *bridge.Block   `json:"context_bridge"`
}

func TestBridgeRoute(t *testing.T) {
	base := bridgeStack(t, true)
	ingest := `{"trajectories": [
		{"trajectory_id": "t-open", "session_id": "s1", "description": "How to optimize database queries", "domain": "engineering", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.8},
		{"trajectory_id": "t-sealed", "session_id": "s2", "description": "How to optimize database queries on the ops cluster", "domain": "engineering", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.8}]}`
	if r := post(t, base+"/v1/bridge/trajectories", ingest, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	// t-sealed becomes restricted to ops, as any item can be.
	if r := post(t, base+"/v1/items", `{"id": "t-sealed", "kind": "trajectory", "text": "How to optimize database queries on the ops cluster\nconcepts: optim databas queri op cluster",
		"content": {"session_id": "s2", "description": "How to optimize database queries on the ops cluster", "domain": "engineering", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.8},
		"metadata": {"restrictedToGroups": ["ops"], "domain": "engineering"}}`, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("restricting: %d %s", r.status, r.body)
	}
	call := `{"tool": "think", "params": {"content": "How to optimize database queries on the ops cluster", "domain": "engineering"}, "result": {"thought_id": "x"}}`
	answer := func(key string) (bridgeAnswer, string) {
		r := post(t, base+"/v1/bridge", call, bearer(key)...)
		if r.status != http.StatusOK {
			t.Fatalf("bridge: %d %s", r.status, r.body)
		}
		var a bridgeAnswer
		if err := json.Unmarshal(r.body, &a); err != nil {
			t.Fatal(err)
		}
		return a, string(r.body)
	}
	ops, _ := answer(restrictedKey)
	if ops.ContextBridge == nil || len(ops.ContextBridge.Matches) == 0 || ops.ContextBridge.Matches[0].TrajectoryID != "t-sealed" {
		t.Fatalf("the ops key's answer %+v: the test shows nothing", ops.ContextBridge)
	}
	pub, raw := answer(publicKey)
	if strings.Contains(raw, "t-sealed") || strings.Contains(raw, "ops cluster\"") && strings.Contains(raw, "s2") {
		t.Errorf("the public key's answer names the restricted trajectory: %s", raw)
	}
	if pub.ContextBridge == nil || len(pub.ContextBridge.Matches) != 1 || pub.ContextBridge.Matches[0].TrajectoryID != "t-open" {
		t.Errorf("the public key's matches %+v, want t-open alone", pub.ContextBridge)
	}
	if pub.ContextBridge == nil || string(pub.Result) != `{"thought_id": "x"}` && string(pub.Result) != `{"thought_id":"x"}` {
		t.Errorf("public answer %s", raw)
	}

	bad := []struct{ name, body, field string }{
		{"no tool", `{"params": {}}`, "tool"},
		{"no params", `{"tool": "think"}`, "params"},
		{"params a list", `{"tool": "think", "params": []}`, "params"},
		{"unknown field", `{"tool": "think", "params": {}, "clearance": "restricted"}`, "clearance"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, base+"/v1/bridge", tt.body, bearer(publicKey)...)
			if e := checkErrorShape(t, r); r.status != http.StatusBadRequest || e.Field != tt.field {
				t.Errorf("status %d field %q, want 400 %q", r.status, e.Field, tt.field)
			}
		})
	}
	if r := post(t, base+"/v1/bridge/trajectories", `{"trajectory_id": "x", "description": "d", "success_score": 2}`, bearer(adminKey)...); r.status != http.StatusBadRequest || checkErrorShape(t, r).Field != "success_score" {
		t.Errorf("bad trajectory: %d %s", r.status, r.body)
	}
	if r := post(t, base+"/v1/bridge/trajectories", `{"trajectories": [{"trajectory_id": "x", "description": "d", "sucess_score": 1}]}`, bearer(adminKey)...); r.status != http.StatusBadRequest || checkErrorShape(t, r).Field != "trajectories[0].sucess_score" {
		t.Errorf("misspelt field in a batch: %d %s", r.status, r.body)
	}
	if r := post(t, base+"/v1/bridge/trajectories", `{"trajectory_id": "x", "description": "d"}`, bearer(publicKey)...); r.status != http.StatusForbidden {
		t.Errorf("a read key stored a trajectory: %d", r.status)
	}
}

// TestBridgeOffLeavesTheResultAlone: the bridge contract's scenario 4 over HTTP.
func TestBridgeOffLeavesTheResultAlone(t *testing.T) {
	base := bridgeStack(t, false)
	r := post(t, base+"/v1/bridge", `{"tool": "think", "params": {"content": "login selector"}, "result": [1, 2]}`, bearer(publicKey)...)
	if r.status != http.StatusOK || strings.Contains(string(r.body), "context_bridge") || !strings.Contains(string(r.body), `"result":[1, 2]`) && !strings.Contains(string(r.body), `"result":[1,2]`) {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// brokenSource fails every read, as a store that is down.
type brokenSource struct{}

func (brokenSource) Candidates(context.Context, h4r.Specialist, *bridge.Signature, int) ([]bridge.Candidate, error) {
	return nil, errors.New("the store is down")
}

// TestBridgeObservability: the bridge's counters and latency are in the
// server's /metrics, and /health/ready shows it degraded after a failed
// enrichment while the server stays ready.
func TestBridgeObservability(t *testing.T) {
	base := bridgeStackOver(t, true, brokenSource{})
	call := `{"tool": "think", "params": {"content": "How to optimize database queries"}, "result": "r"}`
	if r := post(t, base+"/v1/bridge", call, bearer(adminKey)...); r.status != http.StatusOK || strings.Contains(string(r.body), "context_bridge") {
		t.Fatalf("bridge over a broken store: %d %s, want the result alone", r.status, r.body)
	}
	r := do(t, http.MethodGet, base+"/health/ready", nil)
	var ready struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(r.body, &ready); err != nil || r.status != http.StatusOK || ready.Status != "ready" || ready.Checks["context_bridge"] != "degraded" {
		t.Errorf("/health/ready = %d %s, want ready with checks.context_bridge degraded", r.status, r.body)
	}
	r = do(t, http.MethodGet, base+"/metrics", nil, bearer(adminKey)...)
	for _, want := range []string{
		"h4r_bridge_enrichments_total 1", "h4r_bridge_errors_total 1", "h4r_bridge_timeouts_total 0",
		"h4r_bridge_cache_misses_total 1", "h4r_bridge_cache_hits_total 0", "h4r_bridge_cache_hit_ratio 0",
		"h4r_bridge_degraded 1", "h4r_bridge_enrichment_duration_seconds_count 1",
		`h4r_bridge_enrichment_duration_seconds_bucket{le="0.075"}`, "h4r_bridge_enrichment_avg_seconds",
		"h4r_bridge_enrichment_max_seconds", "h4r_bridge_matches_total 0", "h4r_bridge_embedding_failures_total 0",
	} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
}

// TestBackfillSignatures: POST /admin/backfill-signatures (admin keys
// only) starts a job that gives every stored trajectory its current
// signature (written through /v1/items without its concepts, here),
// keeping its policy metadata, with its progress at GET /v1/jobs/{id}.
func TestBackfillSignatures(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	jb, err := app.OpenJobs(t.Context(), a, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jb.Close() })
	bc := bridge.DefaultConfig()
	bc.Enabled = true
	b, err := bridge.New(bc, bridge.EngineSource{Packer: a.Engine}, bridge.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	base := (&stack{srv: server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithAuthenticator(keys), server.WithClock(clock),
		server.WithBridge(b), server.WithJobs(jb)), store: a.Store}).serve(t)

	bare := `{"id": "t-bare", "kind": "trajectory", "text": "SQL query performance tuning",
		"content": {"session_id": "s9", "description": "SQL query performance tuning", "domain": "engineering", "tool_sequence": ["think"], "success_score": 0.9, "quality_score": 0.8},
		"metadata": {"restrictedToGroups": ["ops"], "domain": "engineering"}}`
	if r := post(t, base+"/v1/items", bare, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("storing: %d %s", r.status, r.body)
	}
	for _, key := range []string{publicKey, ingestKey} {
		if r := post(t, base+"/admin/backfill-signatures", "", bearer(key)...); r.status != http.StatusForbidden {
			t.Errorf("backfill with %s: %d %s, want 403", key, r.status, r.body)
		}
	}
	r := post(t, base+"/admin/backfill-signatures", "", bearer(adminKey)...)
	var started struct {
		JobID string `json:"job_id"`
	}
	if r.status != http.StatusAccepted || json.Unmarshal(r.body, &started) != nil || started.JobID == "" {
		t.Fatalf("backfill: %d %s", r.status, r.body)
	}
	var job struct {
		State    string `json:"state"`
		Kind     string `json:"kind"`
		Progress struct {
			ItemsDone    int `json:"items_done"`
			ItemsTotal   int `json:"items_total"`
			FilesChanged int `json:"files_changed"`
		} `json:"progress"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := do(t, http.MethodGet, base+"/v1/jobs/"+started.JobID, nil, bearer(adminKey)...)
		if err := json.Unmarshal(r.body, &job); err != nil {
			t.Fatal(err)
		}
		if job.State == "succeeded" || job.State == "failed" || time.Now().After(deadline) {
			break
		}
	}
	if job.State != "succeeded" || job.Kind != "backfill-signatures" || job.Progress.ItemsTotal != 1 || job.Progress.ItemsDone != 1 || job.Progress.FilesChanged != 1 {
		t.Fatalf("job %+v, want succeeded with one trajectory rewritten", job)
	}
	it, err := a.Store.Get(t.Context(), "t-bare")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(it.Text, "\nconcepts: ") || !slices.Equal(it.Metadata.RestrictedToGroups, []string{"ops"}) {
		t.Errorf("after the backfill: text %q, groups %v", it.Text, it.Metadata.RestrictedToGroups)
	}
}
