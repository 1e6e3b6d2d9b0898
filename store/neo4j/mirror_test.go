package neo4j_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/store/neo4j/bolttest"
)

var diskFull = &bolttest.Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: "disk full"}

func link(typ, target string) h4r.Link {
	return h4r.Link{Type: typ, Target: target, Strength: 1}
}

// TestMirrorShapesTheGraph checks the graph the mirror writes: nodes per
// item, typed relationships per link in the item's order, placeholders for
// targets not ingested, replaced links on a new version, and deletions
// that keep a node while others still link to it.
func TestMirrorShapesTheGraph(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.ingest(t,
		h4r.Item{ID: "a", Kind: "test_failure", Text: "a", Links: []h4r.Link{link("caused_by", "b"), link("similar_to", "ghost")}},
		h4r.Item{ID: "b", Kind: "change", Text: "b"},
	)
	nodes := r.graph.Nodes()
	want := []bolttest.Link{{Type: "caused_by", Target: "b", Position: 0, Strength: 1}, {Type: "similar_to", Target: "ghost", Position: 1, Strength: 1}}
	if a := nodes["a"]; !a.Present || a.Kind != "test_failure" || !slices.Equal(a.Links, want) {
		t.Errorf("node a = %+v", a)
	}
	if g := nodes["ghost"]; g.Present || len(nodes) != 3 {
		t.Errorf("the target not ingested is %+v among %d nodes; want a placeholder among 3", g, len(nodes))
	}
	if !slices.Contains(r.graph.Constraints(), "h4r_item_id") {
		t.Error("the unique constraint on item ids was not created at start")
	}

	// A new version replaces the links.
	r.ingest(t, h4r.Item{ID: "a", Kind: "fix", Text: "a2", Links: []h4r.Link{link("fixes", "b")}})
	if a := r.graph.Nodes()["a"]; a.Kind != "fix" || !slices.Equal(a.Links, []bolttest.Link{{Type: "fixes", Target: "b", Strength: 1}}) {
		t.Errorf("after a new version, node a = %+v", a)
	}

	// b is deleted while a links to it: its node stays, not present, and a
	// walk from a does not reach it, as in the store.
	if err := r.store.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	r.mirror.Changed(ctx, "b")
	if b, ok := r.graph.Nodes()["b"]; !ok || b.Present {
		t.Errorf("deleted b, still linked to, is %+v (kept: %v); want a placeholder", b, ok)
	}
	hits, err := r.generator().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"a"}})
	if err != nil || len(hits) != 1 {
		t.Errorf("walk from a after b's deletion: %v, %v", ordered(hits), err)
	}
	// a goes too: its links go, and b, linked to by nothing, goes.
	if err := r.store.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r.mirror.Changed(ctx, "a")
	nodes = r.graph.Nodes()
	if _, ok := nodes["b"]; ok {
		t.Errorf("b outlived the last link to it: %v", nodes)
	}
	if n, err := r.client.Count(ctx); err != nil || n != 0 {
		t.Errorf("graph holds %d items (%v), want 0", n, err)
	}
}

// A mirror write that fails loses nothing: the store has the item, the id
// waits, and a retry writes the store's current state, even when the item
// changed or went away in between.
func TestMirrorRetriesWhatFailed(t *testing.T) {
	for _, tc := range []struct {
		name        string
		meanwhile   func(t *testing.T, r *rig)
		wantPresent bool
		wantKind    string
	}{
		{"retry writes the item", func(*testing.T, *rig) {}, true, "v1"},
		{"retry writes the newest version", func(t *testing.T, r *rig) {
			if _, err := r.store.Upsert(context.Background(), []h4r.Item{{ID: "a", Kind: "v2", Text: "a"}}); err != nil {
				t.Fatal(err)
			}
			r.mirror.Changed(context.Background(), "a") // fails too: Neo4j is still down
		}, true, "v2"},
		{"retry of a deleted item deletes it", func(t *testing.T, r *rig) {
			if err := r.store.Delete(context.Background(), "a"); err != nil {
				t.Fatal(err)
			}
		}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, neo4j.WithMaxRetryTime(0))
			ctx := context.Background()
			r.graph.FailAll(diskFull)
			if _, err := r.store.Upsert(ctx, []h4r.Item{{ID: "a", Kind: "v1", Text: "a"}}); err != nil {
				t.Fatal(err)
			}
			r.mirror.Changed(ctx, "a")
			if got := r.mirror.Pending(); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("pending %v, want [a]", got)
			}
			if err := r.mirror.LastError(); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Errorf("last error %v, want the failure", err)
			}
			tc.meanwhile(t, r)

			if err := r.mirror.Retry(ctx); err == nil {
				t.Error("a retry while Neo4j fails succeeded")
			}
			if got := r.mirror.Pending(); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("after a failed retry pending %v, want [a]", got)
			}
			r.graph.FailAll(nil)
			if err := r.mirror.Retry(ctx); err != nil {
				t.Fatal(err)
			}
			if p := r.mirror.Pending(); len(p) != 0 || r.mirror.LastError() != nil {
				t.Errorf("after a retry: pending %v, last error %v", p, r.mirror.LastError())
			}
			a, ok := r.graph.Nodes()["a"]
			if ok != tc.wantPresent || a.Present != tc.wantPresent || a.Kind != tc.wantKind {
				t.Errorf("node a = %+v (exists %v), want present=%v kind=%q", a, ok, tc.wantPresent, tc.wantKind)
			}
		})
	}
}

// Run retries in the background once told that a sync failed.
func TestMirrorRunRetriesInTheBackground(t *testing.T) {
	r := newRig(t, neo4j.WithMaxRetryTime(0), neo4j.WithRetryBackoff(1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.mirror.Run(ctx) }()
	defer func() { cancel(); <-done }()

	r.graph.FailNext(diskFull)
	if _, err := r.store.Upsert(context.Background(), []h4r.Item{{ID: "a", Kind: "event", Text: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.mirror.Sync(context.Background(), "a"); err == nil {
		t.Fatal("the first sync did not fail")
	}
	// Wait for the retry by asking the graph, through the mirror's own
	// serialisation: a Sync of nothing waits for the running retry.
	for len(r.mirror.Pending()) > 0 {
		_ = r.mirror.Sync(context.Background())
	}
	if a := r.graph.Nodes()["a"]; !a.Present {
		t.Errorf("node a = %+v after the background retry", a)
	}
}

// Hostile ids and link types travel as parameters: the fake answers only
// the package's fixed statements, so any text built from them would fail.
func TestHostileValuesAreParameters(t *testing.T) {
	r := newRig(t)
	evil := `x"}) DETACH DELETE n //`
	typ := "caused by`]->() DELETE r //"
	r.ingest(t,
		h4r.Item{ID: evil, Kind: "event", Text: "evil", Links: []h4r.Link{link(typ, "b")}},
		h4r.Item{ID: "b", Kind: "event", Text: "b"},
	)
	hits, err := r.generator().Generate(context.Background(), h4r.CandidateQuery{Anchors: []string{evil}})
	if err != nil || !slices.Equal(ordered(hits), []idDist{{evil, 0}, {"b", 1}}) {
		t.Errorf("walk from %q: %v, %v", evil, ordered(hits), err)
	}
	if l := r.graph.Nodes()[evil].Links; len(l) != 1 || l[0].Type != typ {
		t.Errorf("links %+v, want one of type %q", l, typ)
	}
}

// Writers that race each other leave the graph as the store ends: each
// sync reads the store under the mirror's turn, so the last sync to run
// saw every write before it.
func TestConcurrentWritersConverge(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for v := range 5 {
				kind := fmt.Sprintf("w%d-v%d", w, v)
				item := h4r.Item{ID: "shared", Kind: kind, Text: "shared",
					Links: []h4r.Link{link("caused_by", kind)}}
				if _, err := r.store.Upsert(ctx, []h4r.Item{item}); err != nil {
					t.Error(err)
					return
				}
				r.mirror.Changed(ctx, "shared")
			}
		})
	}
	wg.Wait()
	stored, err := r.store.Get(ctx, "shared")
	if err != nil {
		t.Fatal(err)
	}
	node := r.graph.Nodes()["shared"]
	if node.Kind != stored.Kind || len(node.Links) != 1 || node.Links[0].Target != stored.Links[0].Target {
		t.Errorf("graph has %+v, the store %s → %s", node, stored.Kind, stored.Links[0].Target)
	}
	if p := r.mirror.Pending(); len(p) != 0 {
		t.Errorf("pending %v", p)
	}
}

// TestMirrorCarriesEntityLinks: a link's targetType and context reach the
// relationship, and a target that is no item (a file, an epic) becomes a
// placeholder node that hops do not pass through.
func TestMirrorCarriesEntityLinks(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.ingest(t, h4r.Item{ID: "dt-1", Kind: "decision_trace", Text: "assign auth", Links: []h4r.Link{
		{Type: h4r.LinkCitesPrecedent, Target: "mj100", TargetType: h4r.TargetEpic, Strength: 1, Context: "solved OAuth refresh"},
		{Type: h4r.LinkAssignsFile, Target: "src/auth.ts", TargetType: h4r.TargetFile, Strength: 0.5},
	}})
	want := []bolttest.Link{
		{Type: h4r.LinkCitesPrecedent, Target: "mj100", Strength: 1, TargetType: h4r.TargetEpic, Context: "solved OAuth refresh"},
		{Type: h4r.LinkAssignsFile, Target: "src/auth.ts", Position: 1, Strength: 0.5, TargetType: h4r.TargetFile},
	}
	nodes := r.graph.Nodes()
	if got := nodes["dt-1"].Links; !slices.Equal(got, want) {
		t.Errorf("relationships = %+v, want %+v", got, want)
	}
	if f, ok := nodes["src/auth.ts"]; !ok || f.Present {
		t.Errorf("the file target is %+v (exists: %v); want a placeholder", f, ok)
	}
	hits, err := r.generator().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"dt-1"}})
	if err != nil || len(hits) != 1 {
		t.Errorf("a walk from dt-1 = %v, %v; want only dt-1", ordered(hits), err)
	}
}
