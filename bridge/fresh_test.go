package bridge_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
)

// names returns the trajectory ids blk names, or fails when there is no
// answer.
func names(t *testing.T, blk *bridge.Block) []string {
	t.Helper()
	if blk == nil || blk.Status != "" {
		t.Fatalf("context_bridge = %+v, want an answer", blk)
	}
	ids := []string{}
	for _, m := range blk.Matches {
		ids = append(ids, m.TrajectoryID)
	}
	slices.Sort(ids)
	return ids
}

// TestAnswersFollowTheStoreAndPolicy runs the service as it is served
// (app.Bridge: the index kept in step by writes, answers cached) through
// writes and a policy change, each step right after a call that cached
// the answer before it: a deleted trajectory is never named again, one
// restricted to ops never again to a public key, a new one is named by the
// next call of a key that already asked, and a policy that stops showing
// trajectories to public keys applies to the very next call.
func TestAnswersFollowTheStoreAndPolicy(t *testing.T) {
	dir := t.TempDir()
	bundled, err := os.ReadFile(filepath.Join("..", "policy", "rego", "context.rego"))
	if err != nil {
		t.Fatal(err)
	}
	writePolicy := func(extra string) {
		if err := os.WriteFile(filepath.Join(dir, "context.rego"), append(slices.Clone(bundled), extra...), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writePolicy("")
	cfg := config.Default()
	cfg.DataDir, cfg.PolicyDir, cfg.PolicyWatch, cfg.BridgeEnabled = t.TempDir(), dir, false, true
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := a.Bridge(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	reloader, ok := a.Policy.(interface{ Reload(context.Context) error })
	if !ok {
		t.Fatalf("policy %T cannot be reloaded", a.Policy)
	}
	const problem = "How to optimize database queries"
	restricted := traj("t1", problem, "engineering", 0.9)
	restricted.Metadata.RestrictedToGroups = []string{"ops"}
	upsert := func(items ...h4r.Item) func(t *testing.T) {
		return func(t *testing.T) {
			if _, err := a.Store.Upsert(t.Context(), items); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name  string
		write func(t *testing.T) // nil: none, the call repeats the last
		spec  h4r.Specialist
		want  []string
	}{
		{"stored", upsert(traj("t1", problem, "engineering", 0.9)), public, []string{"t1"}},
		{"cached", nil, public, []string{"t1"}},
		{"deleted", func(t *testing.T) {
			if err := a.Store.Delete(t.Context(), "t1"); err != nil {
				t.Fatal(err)
			}
		}, public, []string{}},
		{"stored again", upsert(traj("t1", problem, "engineering", 0.9)), public, []string{"t1"}},
		{"restricted to ops", upsert(restricted), public, []string{}},
		{"ops still sees it", nil, ops, []string{"t1"}},
		{"public again", nil, public, []string{}},
		{"a new trajectory", upsert(traj("t2", problem, "engineering", 0.8)), public, []string{"t2"}},
		{"cached again", nil, public, []string{"t2"}},
		{"the policy hides trajectories from public keys", func(t *testing.T) {
			writePolicy("\ndeny contains \"trajectories_for_cleared_only\" if {\n\tinput.item.kind == \"trajectory\"\n\tnot security_level in cleared_levels\n}\n")
			if err := reloader.Reload(t.Context()); err != nil {
				t.Fatal(err)
			}
		}, public, []string{}},
		{"ops under the new policy", nil, ops, []string{"t1", "t2"}},
	}
	params := map[string]any{"content": problem}
	for _, s := range steps {
		if s.write != nil {
			s.write(t)
		}
		if got := names(t, b.Enrich(t.Context(), s.spec, "think", params, nil).ContextBridge); !slices.Equal(got, s.want) {
			t.Fatalf("%s: %s is answered %v, want %v", s.name, s.spec.ID, got, s.want)
		}
	}
	// The repeated calls are answered from the cache, unless the index's
	// first load (in the background) ended between them.
	if hits := b.Metrics().Snapshot()["cache_hits"]; hits < 1 {
		t.Errorf("%d cache hits, want the repeated calls answered from the cache", hits)
	}
}

// TestDeliveryChecksVersions: an answer read from a copy that missed a
// write (an index not kept in step, as another replica's until its change
// feed catches up) is checked against the store at delivery: a deleted
// trajectory is not named, nor one written again at another version
// (restricted, say), until the copy holds the new version.
func TestDeliveryChecksVersions(t *testing.T) {
	const problem = "How to optimize database queries"
	tests := []struct {
		name  string
		write func(t *testing.T, a *app.App)
	}{
		{"deleted", func(t *testing.T, a *app.App) {
			if err := a.Store.Delete(t.Context(), "t1"); err != nil {
				t.Fatal(err)
			}
		}},
		{"restricted", func(t *testing.T, a *app.App) {
			it := traj("t1", problem, "engineering", 0.9)
			it.Metadata.RestrictedToGroups = []string{"ops"}
			if _, err := a.Store.Upsert(t.Context(), []h4r.Item{it}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := openApp(t, traj("t1", problem, "engineering", 0.9))
			store, ok := a.Store.(bridge.VersionReader)
			if !ok {
				t.Fatalf("store %T reads no versions", a.Store)
			}
			src := source(t, a, "index") // loaded once, then never synced
			b, err := bridge.New(enabled(), src, bridge.WithVersions(store), bridge.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			params := map[string]any{"content": problem}
			if got := names(t, b.Enrich(t.Context(), public, "think", params, nil).ContextBridge); !slices.Equal(got, []string{"t1"}) {
				t.Fatalf("before the write: %v", got)
			}
			tt.write(t, a)
			for i := range 2 { // the cached answer, then the index's own
				if got := names(t, b.Enrich(t.Context(), public, "think", params, nil).ContextBridge); len(got) != 0 {
					t.Fatalf("call %d after the write names %v", i, got)
				}
			}
		})
	}
}

// joinSource answers once its gate is closed, or fails when its context
// ends first, and counts its reads.
type joinSource struct {
	gate        chan struct{}
	reads       atomic.Int32
	readStarted chan struct{}
}

func (s *joinSource) Candidates(ctx context.Context, _ h4r.Specialist, _ *bridge.Signature, _ int) ([]bridge.Candidate, error) {
	if s.reads.Add(1) == 1 {
		close(s.readStarted)
	}
	select {
	case <-s.gate:
		return []bridge.Candidate{{TrajectoryID: "t1", Description: "database tuning", SuccessScore: 0.9}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestJoinerKeepsItsOwnDeadline: a call that joins a read in flight for
// the same key is governed by its own context: when the call that started
// the read times out, the read goes on for the one still waiting, which
// gets its answer; the key is read once.
func TestJoinerKeepsItsOwnDeadline(t *testing.T) {
	src := &joinSource{gate: make(chan struct{}), readStarted: make(chan struct{})}
	cfg := enabled()
	cfg.Timeout = time.Minute
	b, err := bridge.New(cfg, src, bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]any{"content": "database tuning"}
	leaderCtx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	leader := make(chan *bridge.Block, 1)
	go func() { leader <- b.Enrich(leaderCtx, public, "think", params, nil).ContextBridge }()
	<-src.readStarted
	joiner := make(chan *bridge.Block, 1)
	go func() { joiner <- b.Enrich(t.Context(), public, "think", params, nil).ContextBridge }()
	if blk := <-leader; blk == nil || blk.Reason != "timeout" {
		t.Fatalf("the leader: context_bridge = %+v, want a timeout", blk)
	}
	if !errors.Is(leaderCtx.Err(), context.DeadlineExceeded) {
		t.Fatal("the leader returned before its deadline")
	}
	close(src.gate)
	blk := <-joiner
	if got := names(t, blk); !slices.Equal(got, []string{"t1"}) {
		t.Fatalf("the joiner got %v, want t1", got)
	}
	if n := src.reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1 shared by both calls", n)
	}
}

// cancelSource reports when its read's context ends.
type cancelSource struct{ cancelled chan struct{} }

func (s *cancelSource) Candidates(ctx context.Context, _ h4r.Specialist, _ *bridge.Signature, _ int) ([]bridge.Candidate, error) {
	<-ctx.Done()
	close(s.cancelled)
	return nil, ctx.Err()
}

// TestReadStopsWhenEveryCallerLeft: a read no call waits for any more (its
// only caller timed out) is cancelled, rather than left running.
func TestReadStopsWhenEveryCallerLeft(t *testing.T) {
	src := &cancelSource{cancelled: make(chan struct{})}
	cfg := enabled()
	cfg.Timeout = 30 * time.Millisecond
	b, err := bridge.New(cfg, src, bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	if blk := b.Enrich(t.Context(), public, "think", map[string]any{"content": "database tuning"}, nil).ContextBridge; blk == nil || blk.Reason != "timeout" {
		t.Fatalf("context_bridge = %+v, want a timeout", blk)
	}
	select {
	case <-src.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the read goes on after its only caller left")
	}
}
