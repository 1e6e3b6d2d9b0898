package app

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
)

// TestBridgeAcrossReplicas runs two services over one Postgres database,
// writing through one (A) and asking the other (B), whose answer for the
// key is cached each time before the write: a trajectory deleted through
// A is never named by B's first call after the delete was acknowledged,
// nor one restricted to ops named to a public key, and a new trajectory
// is named by B once its index followed the change feed. It logs the
// windows it measured: how long after the acknowledgement B's index still
// held a deleted trajectory, and how long before B named a new one.
func TestBridgeAcrossReplicas(t *testing.T) {
	url := pgtest.Schema(t, "h4r_app_test")
	quiet := slog.New(slog.DiscardHandler)
	open := func() (*App, *bridge.Bridge) {
		cfg := config.Default()
		cfg.DataDir, cfg.DatabaseURL, cfg.BridgeEnabled = t.TempDir(), url, true
		cfg.GeneratorTimeout, cfg.RequestTimeout = time.Minute, time.Minute
		a, err := Open(t.Context(), cfg, WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		b, err := a.Bridge(quiet)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the index's first load", func() bool { return a.trajectories.Loaded() })
		return a, b
	}
	a, ba := open()
	r, br := open()
	const problem = "How to optimize database queries"
	public := h4r.Specialist{Type: "specialist", ID: "bot", SecurityLevel: h4r.Public, AuthorizedGroups: []string{}}
	ops := h4r.Specialist{Type: "specialist", ID: "lead", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{"ops"}}
	names := func(b *bridge.Bridge, spec h4r.Specialist, id string) bool {
		blk := b.Enrich(t.Context(), spec, "think", map[string]any{"content": problem}, nil).ContextBridge
		if blk == nil || blk.Status != "" {
			t.Fatalf("context_bridge = %+v, want an answer", blk)
		}
		return slices.ContainsFunc(blk.Matches, func(m bridge.Match) bool { return m.TrajectoryID == id })
	}
	traj := func(id string, groups ...string) h4r.Item {
		it := bridge.Trajectory{ID: id, SessionID: "s-" + id, Description: problem, Domain: "engineering", SuccessScore: 0.9, QualityScore: 0.8}.Item()
		it.Metadata.RestrictedToGroups = groups
		return it
	}
	upsert := func(it h4r.Item) time.Time {
		if _, err := a.Store.Upsert(t.Context(), []h4r.Item{it}); err != nil {
			t.Fatal(err)
		}
		return time.Now()
	}

	const trials = 9
	var appear, indexed []time.Duration
	for i := range trials {
		id := fmt.Sprintf("t%d", i)
		ack := upsert(traj(id))
		if !names(ba, public, id) {
			t.Fatalf("trial %d: A does not name %s right after writing it", i, id)
		}
		waitFor(t, "B naming the new trajectory", func() bool { return names(br, public, id) })
		appear = append(appear, time.Since(ack))
		if !names(br, public, id) { // cached now
			t.Fatalf("trial %d: B no longer names %s", i, id)
		}
		if err := a.Store.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		ack = time.Now()
		if names(br, public, id) {
			t.Fatalf("trial %d: B named %s after its delete was acknowledged", i, id)
		}
		waitFor(t, "B's index dropping the deleted trajectory", func() bool { return r.trajectories.Len() == 0 })
		indexed = append(indexed, time.Since(ack))
		if names(br, public, id) {
			t.Fatalf("trial %d: B names %s again", i, id)
		}
	}

	upsert(traj("t-ops"))
	waitFor(t, "B naming the trajectory", func() bool { return names(br, public, "t-ops") })
	upsert(traj("t-ops", "ops"))
	if names(br, public, "t-ops") {
		t.Fatal("B named a trajectory restricted to ops to a public key after the restriction was acknowledged")
	}
	waitFor(t, "B naming the restricted trajectory to ops", func() bool { return names(br, ops, "t-ops") })
	if names(br, public, "t-ops") {
		t.Fatal("B names the restricted trajectory to a public key")
	}
	slices.Sort(appear)
	slices.Sort(indexed)
	t.Logf("over %d trials: B's first call after a delete was acknowledged never named it; B's index held it for median %v, max %v; B named a new trajectory after median %v, max %v (the feed is read when notified, and every %v)",
		trials, indexed[trials/2], indexed[trials-1], appear[trials/2], appear[trials-1], trajectoryFeedPoll)
}

// waitFor polls cond until it holds, failing t after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s: not after 10 s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
