package bridge_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/scs"
)

var (
	public = h4r.Specialist{Type: "specialist", ID: "bot", SecurityLevel: h4r.Public, AuthorizedGroups: []string{}}
	ops    = h4r.Specialist{Type: "specialist", ID: "lead", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{"ops"}}
)

// openApp is the real service (SQLite store, bundled OPA policy, engine)
// holding trajectories.
func openApp(t testing.TB, items ...h4r.Item) *app.App {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if len(items) > 0 {
		if _, err := a.Store.Upsert(t.Context(), items); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

func enabled() bridge.Config {
	c := bridge.DefaultConfig()
	c.Enabled = true
	return c
}

func traj(id, desc, domain string, success float64) h4r.Item {
	return bridge.Trajectory{ID: id, SessionID: "sess-" + id, Description: desc, Domain: domain, ToolSequence: []string{"think"},
		SuccessScore: success, QualityScore: 0.8}.Item()
}

// TestScenarios are the bridge contract's five scenarios, against the real
// store and engine.
func TestScenarios(t *testing.T) {
	tests := []struct {
		name       string
		stored     []h4r.Item
		cfg        func(*bridge.Config)
		params     map[string]any
		breakStore bool
		check      func(t *testing.T, r bridge.Response, m map[string]int64, log string)
	}{
		{name: "1 identical problem", stored: []h4r.Item{traj("t1", "How to optimize database queries", "engineering", 0.9)},
			params: map[string]any{"content": "How to optimize database queries", "mode": "linear"},
			check: func(t *testing.T, r bridge.Response, _ map[string]int64, _ string) {
				b := r.ContextBridge
				if b == nil || len(b.Matches) < 1 || b.Matches[0].Similarity < 0.95 || !strings.Contains(b.Recommendation, "high success") {
					t.Fatalf("context_bridge = %+v", b)
				}
				if b.Matches[0].TrajectoryID != "t1" || b.Matches[0].SessionID != "sess-t1" || b.Matches[0].SuccessScore != 0.9 {
					t.Errorf("match = %+v", b.Matches[0])
				}
			}},
		{name: "2 similar domain", stored: []h4r.Item{traj("t2", "SQL query performance tuning", "engineering", 0.7)},
			params: map[string]any{"content": "Best practices database optimization", "domain": "engineering"},
			check: func(t *testing.T, r bridge.Response, _ map[string]int64, _ string) {
				b := r.ContextBridge
				if b == nil || len(b.Matches) < 1 || b.Matches[0].Similarity < 0.6 || b.Matches[0].Similarity > 0.8 {
					t.Fatalf("context_bridge = %+v, want a match with similarity in [0.6, 0.8]", b)
				}
			}},
		{name: "3 unrelated topics", stored: []h4r.Item{traj("t3", "Frontend component design", "frontend", 0.9)},
			params: map[string]any{"content": "Database query optimization", "domain": "backend"},
			check: func(t *testing.T, r bridge.Response, _ map[string]int64, _ string) {
				b := r.ContextBridge
				if b == nil {
					t.Fatal("no context_bridge")
				}
				if len(b.Matches) > 0 && b.Matches[0].Similarity >= 0.3 {
					t.Errorf("matches = %+v, want none or similarity < 0.3", b.Matches)
				}
			}},
		{name: "4 feature flag disabled", stored: []h4r.Item{traj("t4", "How to optimize database queries", "engineering", 0.9)},
			cfg:    func(c *bridge.Config) { c.Enabled = false },
			params: map[string]any{"content": "How to optimize database queries"},
			check: func(t *testing.T, r bridge.Response, m map[string]int64, _ string) {
				if r.ContextBridge != nil || m["total_enrichments"] != 0 {
					t.Errorf("disabled bridge answered %+v (%v)", r.ContextBridge, m)
				}
			}},
		{name: "5 storage failure", stored: []h4r.Item{traj("t5", "Any problem description", "engineering", 0.9)},
			params: map[string]any{"content": "Any problem description"}, breakStore: true,
			check: func(t *testing.T, r bridge.Response, m map[string]int64, log string) {
				if r.ContextBridge != nil {
					t.Errorf("context_bridge = %+v after a storage failure, want it left out", r.ContextBridge)
				}
				if m["error_count"] != 1 || !strings.Contains(log, "level=ERROR") {
					t.Errorf("error_count %d, log %q", m["error_count"], log)
				}
			}},
	}
	for _, tt := range tests {
		for _, via := range []string{"engine", "index"} {
			t.Run(tt.name+" via "+via, func(t *testing.T) {
				a := openApp(t, tt.stored...)
				cfg := enabled()
				if tt.cfg != nil {
					tt.cfg(&cfg)
				}
				var logs bytes.Buffer
				if tt.breakStore {
					if err := a.Store.Close(); err != nil {
						t.Fatal(err)
					}
				}
				// With the store down the index cannot load, and a miss reads
				// through the engine, which fails: EHR-1 either way.
				b, err := bridge.New(cfg, source(t, a, via), bridge.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
				if err != nil {
					t.Fatal(err)
				}
				result := map[string]any{"thought_id": "thought-1"}
				r := b.Enrich(t.Context(), public, "think", tt.params, result)
				if r.Result.(map[string]any)["thought_id"] != "thought-1" {
					t.Errorf("the result changed: %v", r.Result)
				}
				tt.check(t, r, b.Metrics().Snapshot(), logs.String())
			})
		}
	}
}

// source is the Source of a cache miss: "engine" reads a pack, "index"
// looks the call up in a signature index loaded from a's store (falling
// back to the engine if it could not load) and passes the policy slicer.
func source(t testing.TB, a *app.App, via string) bridge.Source {
	t.Helper()
	engine := bridge.EngineSource{Packer: a.Engine}
	if via == "engine" {
		return engine
	}
	idx := bridge.NewIndex(nil)
	_ = idx.Load(t.Context(), a.Store) // a failed load leaves the fallback in charge
	// The floor as app.Bridge sets it without an embedder.
	return bridge.IndexSource{Index: idx, Slicer: a.Slicer, Fallback: engine, Floor: bridge.DefaultMinSimilarity,
		Budget: scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}}
}

// blockingSource never answers before its context ends.
type blockingSource struct{}

func (blockingSource) Candidates(ctx context.Context, _ h4r.Specialist, _ *bridge.Signature, _ int) ([]bridge.Candidate, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestTimeoutIsADegradedBlock(t *testing.T) {
	cfg := enabled()
	cfg.Timeout = 30 * time.Millisecond
	b, err := bridge.New(cfg, blockingSource{}, bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	r := b.Enrich(t.Context(), public, "think", map[string]any{"content": "database tuning"}, "result")
	blk := r.ContextBridge
	if blk == nil || blk.Status != "degraded" || blk.Reason != "timeout" || blk.Matches == nil || len(blk.Matches) != 0 || !strings.Contains(blk.Detail, "timeout exceeded") {
		t.Fatalf("context_bridge = %+v", blk)
	}
	if b.Metrics().Snapshot()["timeout_count"] != 1 {
		t.Errorf("metrics %v", b.Metrics().Snapshot())
	}
}

// gatedSource answers once its gate is closed, whatever its context, and
// counts the reads in flight.
type gatedSource struct {
	gate              chan struct{}
	inFlight, maxSeen atomic.Int32
}

func (g *gatedSource) Candidates(_ context.Context, _ h4r.Specialist, _ *bridge.Signature, _ int) ([]bridge.Candidate, error) {
	n := g.inFlight.Add(1)
	defer g.inFlight.Add(-1)
	for {
		m := g.maxSeen.Load()
		if n <= m || g.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	<-g.gate
	return nil, nil
}

// TestConcurrencyBoundsEnrichments: no more than WithMaxInFlight reads run
// at once, the rest wait their turn and are answered, and the wait counts
// against the timeout.
func TestConcurrencyBoundsEnrichments(t *testing.T) {
	quiet := bridge.WithLogger(slog.New(slog.DiscardHandler))
	call := func(b *bridge.Bridge, n int) *bridge.Block {
		return b.Enrich(t.Context(), public, "think", map[string]any{"content": fmt.Sprintf("database tuning %d", n)}, nil).ContextBridge
	}
	t.Run("waiting calls are all answered, two at a time", func(t *testing.T) {
		src := &gatedSource{gate: make(chan struct{})}
		cfg := enabled()
		cfg.Timeout = time.Minute
		b, err := bridge.New(cfg, src, bridge.WithMaxInFlight(2), quiet)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		blocks := make([]*bridge.Block, 10)
		for i := range blocks {
			wg.Go(func() { blocks[i] = call(b, i) })
		}
		for src.inFlight.Load() < 2 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // a third read, if let in, would start now
		close(src.gate)
		wg.Wait()
		if got := src.maxSeen.Load(); got != 2 {
			t.Errorf("%d reads ran at once, want 2", got)
		}
		for i, blk := range blocks {
			if blk == nil || blk.Status != "" {
				t.Errorf("call %d: context_bridge = %+v, want an answer", i, blk)
			}
		}
	})
	t.Run("a read that outlives its call keeps its turn", func(t *testing.T) {
		src := &gatedSource{gate: make(chan struct{})}
		cfg := enabled()
		cfg.Timeout = 50 * time.Millisecond
		b, err := bridge.New(cfg, src, bridge.WithMaxInFlight(1), quiet)
		if err != nil {
			t.Fatal(err)
		}
		if blk := call(b, 1); blk == nil || blk.Reason != "timeout" {
			t.Fatalf("first call: context_bridge = %+v, want a timeout", blk)
		}
		// The first read still runs: the second call waits for the turn
		// it holds and times out without reading.
		if blk := call(b, 2); blk == nil || blk.Reason != "timeout" || src.maxSeen.Load() != 1 {
			t.Fatalf("second call: context_bridge = %+v with %d reads at once, want a timeout and 1", blk, src.maxSeen.Load())
		}
		close(src.gate)
		for src.inFlight.Load() > 0 {
			time.Sleep(time.Millisecond)
		}
		if blk := call(b, 3); blk == nil || blk.Status != "" {
			t.Fatalf("after the read ended: context_bridge = %+v, want an answer", blk)
		}
		if got := b.Metrics().Snapshot()["timeout_count"]; got != 2 {
			t.Errorf("timeout_count = %d, want 2", got)
		}
	})
}

// TestEmbeddingFailureFallsBackToConcepts: an OpenAI-compatible server
// that fails makes the bridge match on concepts and say so; one that
// answers (the hash embedder here) makes it hybrid.
func TestEmbeddingFailureFallsBackToConcepts(t *testing.T) {
	a := openApp(t, traj("t1", "How to optimize database queries", "engineering", 0.9))
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error": {"message": "model overloaded"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	remote, err := embed.NewOpenAI(failing.URL, "text-embedding-3-small")
	if err != nil {
		t.Fatal(err)
	}
	hash, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"content": "optimize the database queries please"}
	tests := []struct {
		name    string
		e       h4r.Embedder
		mode    string
		embStat string
	}{
		{"failing embedder", remote, "concept_only", "failed"},
		{"working embedder", hash, "hybrid", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := bridge.New(enabled(), bridge.EngineSource{Packer: a.Engine}, bridge.WithEmbedder(tt.e), bridge.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			blk := b.Enrich(t.Context(), public, "think", params, nil).ContextBridge
			if blk == nil || blk.SimilarityMode != tt.mode || blk.EmbeddingStatus != tt.embStat || len(blk.Matches) != 1 {
				t.Fatalf("context_bridge = %+v", blk)
			}
			if tt.embStat != "" && blk.EmbeddingError == "" {
				t.Error("embedding_error is empty")
			}
		})
	}
}

// TestPolicyAndCache: a trajectory restricted to ops is a match for an ops
// key and never for a public one, also once the ops answer is cached;
// a repeated call is a cache hit; a tool off the allow-list and a call
// without text are not enriched.
func TestPolicyAndCache(t *testing.T) {
	for _, via := range []string{"engine", "index"} {
		t.Run(via, func(t *testing.T) { testPolicyAndCache(t, via) })
	}
}

func testPolicyAndCache(t *testing.T, via string) {
	secret := traj("t-ops", "How to optimize database queries", "engineering", 0.9)
	secret.Metadata.RestrictedToGroups = []string{"ops"}
	a := openApp(t, secret)
	opts := []bridge.Option{bridge.WithLogger(slog.New(slog.DiscardHandler))}
	if via == "engine" {
		// The engine has no generation of its own: that of an index
		// nothing writes to, as nothing is written here.
		opts = append(opts, bridge.WithChanges(bridge.NewIndex(nil)))
	}
	b, err := bridge.New(enabled(), source(t, a, via), opts...)
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"content": "How to optimize database queries"}
	for range 2 {
		if blk := b.Enrich(t.Context(), ops, "think", params, nil).ContextBridge; blk == nil || len(blk.Matches) != 1 {
			t.Fatalf("ops key: %+v", blk)
		}
	}
	if hits := b.Metrics().Snapshot()["cache_hits"]; hits != 1 {
		t.Errorf("cache hits %d after a repeated call, want 1", hits)
	}
	if blk := b.Enrich(t.Context(), public, "think", params, nil).ContextBridge; blk == nil || len(blk.Matches) != 0 {
		t.Errorf("public key got %+v", blk)
	}
	if r := b.Enrich(t.Context(), ops, "delete-everything", params, nil); r.ContextBridge != nil {
		t.Error("a tool off the allow-list was enriched")
	}
	if r := b.Enrich(t.Context(), ops, "think", map[string]any{"mode": "linear"}, nil); r.ContextBridge != nil {
		t.Error("a call without text was enriched")
	}
}

func TestConceptSimilarity(t *testing.T) {
	x := bridge.TechExtractor{}
	sig := func(text, domain string) *bridge.Signature {
		return bridge.ExtractSignature("think", map[string]any{"content": text, "domain": domain}, x)
	}
	tests := []struct {
		name   string
		a, b   *bridge.Signature
		lo, hi float64
	}{
		{"identical", sig("optimize database queries", "engineering"), sig("optimize database queries", "engineering"), 0.95, 1},
		{"synonyms share concepts", sig("speed up SQL queries", ""), sig("optimize database queries", ""), 0.7, 1},
		{"different domains", sig("database optimization", "backend"), sig("frontend component design", "frontend"), 0, 0.35},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s := bridge.ConceptSimilarity(tt.a, tt.b); s < tt.lo || s > tt.hi {
				t.Errorf("similarity %.3f, want [%v, %v] (%v vs %v)", s, tt.lo, tt.hi, tt.a.KeyConcepts, tt.b.KeyConcepts)
			}
		})
	}
}

// switchSource answers one trajectory after a delay, or fails.
type switchSource struct {
	fail  atomic.Bool
	delay time.Duration
}

func (s *switchSource) Candidates(ctx context.Context, _ h4r.Specialist, _ *bridge.Signature, _ int) ([]bridge.Candidate, error) {
	time.Sleep(s.delay)
	if s.fail.Load() {
		return nil, fmt.Errorf("the store is down")
	}
	return []bridge.Candidate{{TrajectoryID: "t1", SessionID: "s1", Description: "database tuning", SuccessScore: 0.9}}, nil
}

// TestObservability: latency (average, max) is measured, a slow
// enrichment is logged at WARN with its elapsed time, and the bridge is
// degraded after a failure until an enrichment succeeds.
func TestObservability(t *testing.T) {
	cases := []struct {
		name       string
		delay      time.Duration
		fail       bool
		wantHealth string
		wantSlow   bool
	}{
		{"fast and fine", 0, false, "ok", false},
		{"slow", 120 * time.Millisecond, false, "ok", true},
		{"store failure", 0, true, "degraded", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			src := &switchSource{delay: tc.delay}
			src.fail.Store(tc.fail)
			b, err := bridge.New(enabled(), src, bridge.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Health(); got != "ok" {
				t.Errorf("health before any call = %q, want ok", got)
			}
			b.Enrich(t.Context(), public, "think", map[string]any{"content": "database tuning"}, "r")
			if got := b.Health(); got != tc.wantHealth {
				t.Errorf("health = %q, want %q", got, tc.wantHealth)
			}
			slow := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "enrichment was slow") && strings.Contains(logs.String(), "elapsed=")
			if slow != tc.wantSlow {
				t.Errorf("slow warning logged = %v, want %v: %s", slow, tc.wantSlow, logs.String())
			}
			m := b.Metrics().Snapshot()
			if tc.delay > 0 && (m["max_latency_ms"] < tc.delay.Milliseconds() || m["avg_latency_ms"] < tc.delay.Milliseconds()) {
				t.Errorf("latency avg %d ms, max %d ms; want at least %s", m["avg_latency_ms"], m["max_latency_ms"], tc.delay)
			}
			if tc.fail {
				src.fail.Store(false)
				b.Enrich(t.Context(), public, "think", map[string]any{"content": "database tuning"}, "r")
				if got := b.Health(); got != "ok" {
					t.Errorf("health after a good call = %q, want ok", got)
				}
			}
		})
	}
	off, err := bridge.New(bridge.DefaultConfig(), &switchSource{})
	if err != nil {
		t.Fatal(err)
	}
	if got := off.Health(); got != "off" {
		t.Errorf("health of a bridge that is off = %q", got)
	}
}

// TestRollout: a percentage of sessions is enriched, each session always
// alike, and raising the percentage only adds sessions.
func TestRollout(t *testing.T) {
	in := func(holdBack int, session string) bool {
		return bridge.InRollout(holdBack, public, map[string]any{"session_id": session})
	}
	cases := []struct {
		name     string
		percent  int
		min, max int // sessions in, of 2000
	}{
		{"off", 0, 0, 0}, {"ten percent", 10, 140, 260}, {"half", 50, 900, 1100}, {"all", 100, 2000, 2000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for i := range 2000 {
				s := fmt.Sprintf("sess-%d", i)
				got := in(100-tc.percent, s)
				if got != in(100-tc.percent, s) {
					t.Fatalf("%s is in and out", s)
				}
				if got && !in(100-max(tc.percent, 50), s) {
					t.Fatalf("%s is in at %d%% but out at a higher percentage", s, tc.percent)
				}
				if got {
					n++
				}
			}
			if n < tc.min || n > tc.max {
				t.Errorf("%d of 2000 sessions in at %d%%, want %d-%d", n, tc.percent, tc.min, tc.max)
			}
		})
	}
	// Through Enrich: a session left out gets the result alone.
	var out, kept string
	for i := 0; out == "" || kept == ""; i++ {
		s := fmt.Sprintf("s-%d", i)
		if in(50, s) {
			kept = s
		} else {
			out = s
		}
	}
	cfg := enabled()
	cfg.HoldBackPercent = 50
	b, err := bridge.New(cfg, &switchSource{}, bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Enrich(t.Context(), public, "think", map[string]any{"content": "database tuning", "session_id": out}, "r"); r.ContextBridge != nil {
		t.Errorf("session %s, held back, got %+v", out, r.ContextBridge)
	}
	if r := b.Enrich(t.Context(), public, "think", map[string]any{"content": "database tuning", "session_id": kept}, "r"); r.ContextBridge == nil {
		t.Errorf("session %s, rolled out to, got no context_bridge", kept)
	}
}
