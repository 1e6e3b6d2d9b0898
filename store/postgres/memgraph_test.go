package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
	"github.com/h4r/h4r/store/storetest"
)

// memoryGraph walks in memory only, after reading the graph writes
// committed so far, and checks each answer, links included, against the
// frontier walk in the database: an answer from stale memory, or one that
// differs, is an error.
type memoryGraph struct{ s *Store }

func (memoryGraph) Name() string { return h4r.GenGraph }

func (g memoryGraph) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	if err := g.s.catchUpGraph(ctx); err != nil {
		return nil, err
	}
	got, err := graph{s: g.s, via: viaMemory}.Generate(ctx, q)
	if err != nil {
		return nil, err
	}
	want, err := graph{s: g.s, via: viaDatabase}.Generate(ctx, q)
	if err != nil {
		return nil, err
	}
	if g, w := hitsWithLinks(got), hitsWithLinks(want); !slices.Equal(g, w) {
		return nil, fmt.Errorf("memory walk answers\n %v\nfrontier walk answers\n %v", g, w)
	}
	for i := range got { // whole items: the cached ones too
		if !reflect.DeepEqual(got[i], want[i]) {
			return nil, fmt.Errorf("memory walk's hit %d is\n %+v\nfrontier walk's is\n %+v", i, *got[i].Item, *want[i].Item)
		}
	}
	return got, nil
}

// hitsWithLinks is hits as "id@distance[links]", in order.
func hitsWithLinks(hits []h4r.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s@%d%v", h.Item.ID, h.Distance, h.Item.Links)
	}
	return out
}

// memoryStore is the store with the memory-only walk as its graph
// generator.
type memoryStore struct{ *Store }

func (s memoryStore) Graph() h4r.Generator { return memoryGraph{s.Store} }

func loadedStore(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s := newStore(t, opts...)
	if err := s.loadGraph(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMemoryWalkEqualsCTE: the walk in memory, kept current by reading the
// log of graph changes (not reloaded), answers as the recursive query did
// on random graphs with cycles, self-links, links to items never ingested,
// rewrites and deletes, with filters, link types and targets, and as the
// frontier walk does, links of the hits included.
func TestMemoryWalkEqualsCTE(t *testing.T) {
	s := loadedStore(t)
	storetest.CompareHops(t, memoryStore{s}, oneQueryGraph{s: s}, 4, 25)
}

// The storetest hop table through the memory walk, each case written after
// the graph was loaded (so that it reaches memory through the log), links
// added one by one with AddLink included.
func TestMemoryWalkAnswersTheHopTable(t *testing.T) {
	for _, tc := range storetest.HopCases() {
		t.Run(tc.Name, func(t *testing.T) {
			s := loadedStore(t)
			items := tc.Items()
			// the last link of each item comes through AddLink
			var added []func() error
			for i := range items {
				it := &items[i]
				if n := len(it.Links); n > 0 {
					l, id := it.Links[n-1], it.ID
					it.Links = it.Links[:n-1]
					added = append(added, func() error { _, err := s.AddLink(t.Context(), id, l); return err })
				}
			}
			if _, err := s.Upsert(t.Context(), items); err != nil {
				t.Fatal(err)
			}
			for _, add := range added {
				if err := add(); err != nil {
					t.Fatal(err)
				}
			}
			hits, err := memoryGraph{s}.Generate(t.Context(), tc.Query())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, h := range hits {
				got[h.Item.ID] = h.Distance
			}
			if !maps.Equal(got, tc.Want) {
				t.Errorf("distances %v, want %v", got, tc.Want)
			}
		})
	}
}

// warmReplica opens a store over dsn that follows the graph writes of
// others every poll, in the background until t ends, and waits until it
// has loaded the graph.
func warmReplica(t *testing.T, dsn string, poll time.Duration) *Store {
	t.Helper()
	s := openAt(t, dsn, WithGraphPollInterval(poll))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.WarmGraph(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("WarmGraph: %v", err)
		}
	})
	within(t, "the graph loads", func() bool { return s.GraphReady(t.Context()) == nil })
	return s
}

func hopIDs(t *testing.T, g h4r.Generator, q h4r.CandidateQuery) ([]string, error) {
	t.Helper()
	hits, err := g.Generate(t.Context(), q)
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = fmt.Sprintf("%s@%d", h.Item.ID, h.Distance)
	}
	return out, err
}

// Two replicas on one database, each with the graph in memory: a link
// written through one is walked in memory by the other as soon as it
// asks (its first hop after the write finds its memory behind, answers
// from the database and has its memory catch up), or within the poll
// interval without asking; and a replica whose memory is behind never
// follows a link deleted through the other, nor passes through or returns
// an item deleted there.
func TestGraphAcrossReplicas(t *testing.T) {
	dsn := newSchema(t)
	a := warmReplica(t, dsn, time.Hour)
	b := warmReplica(t, dsn, time.Hour) // catches up only when a hop finds it behind
	c := warmReplica(t, dsn, 50*time.Millisecond)
	link := func(to ...string) []h4r.Link {
		var out []h4r.Link
		for _, id := range to {
			out = append(out, h4r.Link{Type: "caused_by", Target: id})
		}
		return out
	}
	items := []h4r.Item{
		{ID: "x", Kind: "event", Text: "deploy", Links: link("y", "m")},
		{ID: "y", Kind: "event", Text: "config change"},
		{ID: "m", Kind: "event", Text: "migration", Links: link("w")},
		{ID: "w", Kind: "event", Text: "outage"},
		{ID: "z", Kind: "event", Text: "alert", Links: link("x")},
	}
	if _, err := a.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	q := h4r.CandidateQuery{Anchors: []string{"x"}, MaxHops: 2}
	want := []string{"x@0", "m@1", "y@1", "z@1", "w@2"}
	check := func(what string, s *Store, via walkPath, want []string) {
		t.Helper()
		got, err := hopIDs(t, graph{s: s, via: via}, q)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %v, want %v", what, got, want)
		}
	}
	check("replica b at once after a's write", b, viaEither, want)
	took := within(t, "replica b walks a's write in memory", func() bool {
		got, err := hopIDs(t, graph{s: b, via: viaMemory}, q)
		if errors.Is(err, errGraphBehind) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return slices.Equal(got, want)
	})
	t.Logf("replica b walked a's write in memory after %v", took)
	took = within(t, "replica c reads a's write by polling", func() bool { return graphGen(c) == graphGen(b) })
	t.Logf("replica c polled a's write in after %v (poll 50 ms)", took)
	check("replica c in memory", c, viaMemory, want)

	// Through a: x no longer links to y, m and z are deleted. b's memory
	// still holds them until it catches up; its hops must not show it.
	if _, err := a.Upsert(t.Context(), []h4r.Item{{ID: "x", Kind: "event", Text: "deploy", Links: link("m")}}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m", "z"} {
		if err := a.Delete(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	check("replica b at once after a's link delete and item deletes", b, viaEither, []string{"x@0"})
	within(t, "replica b walks a's deletes in memory", func() bool {
		got, err := hopIDs(t, graph{s: b, via: viaMemory}, q)
		return err == nil && slices.Equal(got, []string{"x@0"})
	})
	within(t, "replica c polls a's deletes in", func() bool {
		got, err := hopIDs(t, graph{s: c, via: viaMemory}, q)
		return err == nil && slices.Equal(got, []string{"x@0"})
	})
	// The writer walks its own write in memory soon too (it asks its loop).
	within(t, "replica a walks its own write in memory", func() bool {
		got, err := hopIDs(t, graph{s: a, via: viaMemory}, q)
		return err == nil && slices.Equal(got, []string{"x@0"})
	})
}

func graphGen(s *Store) int64 {
	s.graph.mu.RLock()
	defer s.graph.mu.RUnlock()
	return s.graph.gen
}

// A replica behind the pruned log of graph changes reloads the graph
// rather than miss what was pruned.
func TestGraphReloadsPastThePrunedLog(t *testing.T) {
	dsn := newSchema(t)
	a, b := openAt(t, dsn), openAt(t, dsn)
	if err := b.loadGraph(t.Context()); err != nil {
		t.Fatal(err)
	}
	items := []h4r.Item{
		{ID: "p", Kind: "event", Text: "p", Links: []h4r.Link{{Type: "caused_by", Target: "q"}}},
		{ID: "q", Kind: "event", Text: "q"},
	}
	if _, err := a.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	if err := a.pruneGraphChanges(t.Context(), -time.Hour); err != nil { // everything, however recent
		t.Fatal(err)
	}
	var left int
	if err := a.pool.QueryRow(t.Context(), `SELECT count(*) FROM graph_changes`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d changes left after pruning them all (%v)", left, err)
	}
	got, err := hopIDs(t, memoryGraph{b}, h4r.CandidateQuery{Anchors: []string{"p"}, MaxHops: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"p@0", "q@1"}; !slices.Equal(got, want) {
		t.Fatalf("after the log was pruned: %v, want %v", got, want)
	}
}

// A hit whose item was decoded before at another version is decoded again:
// the walk in memory returns the item as it is now (text, content,
// metadata, access counts), equal to the frontier walk's, whether its links
// changed or not, and whether it was deleted and written again.
func TestMemoryWalkReturnsItemsAsTheyAreNow(t *testing.T) {
	s := loadedStore(t)
	write := func(text string, importance float64) {
		t.Helper()
		items := []h4r.Item{
			{ID: "a", Kind: "event", Text: "anchor", Links: []h4r.Link{{Type: "caused_by", Target: "b"}}},
			{ID: "b", Kind: "event", Text: text, Content: map[string]any{"text": text},
				Metadata: h4r.Metadata{Importance: &importance, Extra: map[string]any{"status": text}}},
		}
		if _, err := s.Upsert(t.Context(), items); err != nil {
			t.Fatal(err)
		}
	}
	q := h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: 1}
	second := func(want string) {
		t.Helper()
		hits, err := memoryGraph{s}.Generate(t.Context(), q) // checks every field against the frontier walk
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 2 || hits[1].Item.Text != want || hits[1].Item.Metadata.Extra["status"] != want {
			t.Fatalf("hits %v, want b with text and status %q", hitsWithLinks(hits), want)
		}
	}
	write("first", 0.5)
	second("first")
	second("first") // from the cache
	if _, ok := s.hits.items["b"]; !ok {
		t.Fatal("b was not kept in the hit cache")
	}
	write("second", 0.7) // same links, new version
	second("second")
	// access counts change without a new version
	if err := s.flushAccess(t.Context(), map[string]sqlkit.AccessPending{"b": {Count: 3, Last: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	second("second")
	if err := s.Delete(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	write("third", 0.9)
	second("third")
}
