package app

import (
	"log/slog"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
)

// TestBridgeIndexMirrorsWrites: with the bridge on, the signature index
// is a mirror of the store: a trajectory written, replaced by another kind
// or deleted through a.Store is in step at once, without waiting for the
// periodic reload; with the bridge off there is no index and writes pay
// nothing.
func TestBridgeIndexMirrorsWrites(t *testing.T) {
	open := func(t *testing.T, enabled bool) *App {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		cfg.BridgeEnabled = enabled
		a, err := Open(t.Context(), cfg, WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	if a := open(t, false); a.trajectories != nil {
		t.Fatal("an index is kept with the bridge off")
	}
	a := open(t, true)
	if _, err := a.Bridge(slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	for !a.trajectories.Loaded() { // the first load runs in the background
		select {
		case <-t.Context().Done():
			t.Fatal("the index never loaded")
		case <-time.After(10 * time.Millisecond):
		}
	}
	traj := bridge.Trajectory{ID: "t1", SessionID: "s", Description: "How to optimize database queries", SuccessScore: 0.9}.Item()
	steps := []struct {
		name  string
		write func() error
		want  int
	}{
		{"upsert", func() error { _, err := a.Store.Upsert(t.Context(), []h4r.Item{traj}); return err }, 1},
		{"another kind", func() error {
			_, err := a.Store.Upsert(t.Context(), []h4r.Item{{ID: "t1", Kind: "note", Text: "not a trajectory"}})
			return err
		}, 0},
		{"upsert again", func() error { _, err := a.Store.Upsert(t.Context(), []h4r.Item{traj}); return err }, 1},
		{"delete", func() error { return a.Store.Delete(t.Context(), "t1") }, 0},
	}
	for _, s := range steps {
		if err := s.write(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if n := a.trajectories.Len(); n != s.want {
			t.Fatalf("%s: %d indexed, want %d", s.name, n, s.want)
		}
	}
}
