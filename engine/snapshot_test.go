package engine_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/engine"
)

// snapshotMark is what recordingSnapshots puts in the contexts it returns.
type snapshotMark struct{}

// recordingSnapshots counts the snapshots taken and released; with fail
// set, it cannot take one.
type recordingSnapshots struct {
	fail              bool
	taken, released   atomic.Int32
	releasedTooEarly  atomic.Bool
	generatorsRunning *atomic.Int32
}

func (r *recordingSnapshots) Snapshot(ctx context.Context) (context.Context, func(), error) {
	if r.fail {
		return ctx, func() {}, errors.New("no connection free")
	}
	r.taken.Add(1)
	return context.WithValue(ctx, snapshotMark{}, true), func() {
		if r.generatorsRunning.Load() > 0 {
			r.releasedTooEarly.Store(true)
		}
		r.released.Add(1)
	}, nil
}

// markSeer wraps a generator, counting the calls made under a snapshot
// and those made without one.
type markSeer struct {
	h4r.Generator
	running         *atomic.Int32
	inside, outside atomic.Int32
}

func (g *markSeer) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.running.Add(1)
	defer g.running.Add(-1)
	if ctx.Value(snapshotMark{}) != nil {
		g.inside.Add(1)
	} else {
		g.outside.Add(1)
	}
	return g.Generator.Generate(ctx, q)
}

// TestSnapshotCoversStoreStages: the generators and the walk for
// superseding items of one pack all read under the one snapshot the pack
// takes, released once they have returned; a store that cannot give one
// still answers, each read on its own.
func TestSnapshotCoversStoreStages(t *testing.T) {
	a := openDemo(t)
	for _, tc := range []struct {
		name string
		fail bool
	}{{"snapshot taken", false}, {"snapshot refused", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var running atomic.Int32
			snaps := &recordingSnapshots{fail: tc.fail, generatorsRunning: &running}
			text := &markSeer{Generator: a.Store.FullText(), running: &running}
			graph := &markSeer{Generator: a.Store.Graph(), running: &running}
			e := newEngine(t, a, patient, []h4r.Generator{text}, engine.WithGraphGenerator(graph), engine.WithSnapshots(snaps))
			p, err := e.ContextPack(t.Context(), healer(), &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "login selector"}})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status != h4r.StatusOK || len(p.Results) == 0 {
				t.Fatalf("pack %s with %d results, want ok with some", p.Status, len(p.Results))
			}
			if text.inside.Load()+text.outside.Load() == 0 || graph.inside.Load()+graph.outside.Load() < 2 {
				t.Fatalf("full text ran %d times, the graph %d: want the text search, and the hops and the superseding walk",
					text.inside.Load()+text.outside.Load(), graph.inside.Load()+graph.outside.Load())
			}
			if tc.fail {
				if text.inside.Load()+graph.inside.Load() != 0 {
					t.Errorf("reads under a snapshot that was refused: text %d, graph %d", text.inside.Load(), graph.inside.Load())
				}
				return
			}
			if text.outside.Load()+graph.outside.Load() != 0 {
				t.Errorf("reads outside the pack's snapshot: text %d, graph %d", text.outside.Load(), graph.outside.Load())
			}
			if snaps.taken.Load() != 1 || snaps.released.Load() != 1 {
				t.Errorf("snapshots taken %d, released %d: want one of each", snaps.taken.Load(), snaps.released.Load())
			}
			if snaps.releasedTooEarly.Load() {
				t.Error("the snapshot was released while a generator still read under it")
			}
		})
	}
}
