package sqlite_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/sqlite"
)

func hopDistances(t *testing.T, s *sqlite.Store, q h4r.CandidateQuery) map[string]int {
	t.Helper()
	hits, err := s.Graph().Generate(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, h := range hits {
		out[h.Item.ID] = h.Distance
	}
	return out
}

func linked(id string, targets ...string) h4r.Item {
	it := h4r.Item{ID: id, Kind: "event", Text: "node " + id}
	for _, t := range targets {
		it.Links = append(it.Links, h4r.Link{Type: "caused_by", Target: t})
	}
	return it
}

// Two stores on one file stand for h4r serve and h4r ingest: the graph
// one holds in memory must follow the other's writes (the generation
// counter), and its own.
func TestGraphSeesOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h4r.db")
	server, cli := openAt(t, path), openAt(t, path)
	ctx := t.Context()
	if _, err := server.Upsert(ctx, []h4r.Item{linked("a", "b"), linked("b")}); err != nil {
		t.Fatal(err)
	}
	if err := server.WarmGraph(ctx); err != nil {
		t.Fatal(err)
	}
	q := h4r.CandidateQuery{Anchors: []string{"a"}, MaxHops: 5}
	steps := []struct {
		name  string
		write func() error
		want  map[string]int
	}{
		{"before", func() error { return nil }, map[string]int{"a": 0, "b": 1}},
		{"other process links on", func() error {
			_, err := cli.Upsert(ctx, []h4r.Item{linked("b", "c"), linked("c")})
			return err
		}, map[string]int{"a": 0, "b": 1, "c": 2}},
		{"own write after the other's", func() error {
			_, err := server.Upsert(ctx, []h4r.Item{linked("c", "d"), linked("d")})
			return err
		}, map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}},
		{"other process deletes", func() error { return cli.Delete(ctx, "c") }, map[string]int{"a": 0, "b": 1}},
		{"other process brings it back", func() error {
			_, err := cli.Upsert(ctx, []h4r.Item{linked("c", "a")})
			return err
		}, map[string]int{"a": 0, "b": 1, "c": 1}},
		{"own delete", func() error { return server.Delete(ctx, "b") }, map[string]int{"a": 0, "c": 1}},
		{"own rewrite drops a link", func() error {
			_, err := server.Upsert(ctx, []h4r.Item{linked("c")})
			return err
		}, map[string]int{"a": 0}},
	}
	for _, st := range steps {
		if err := st.write(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for name, s := range map[string]*sqlite.Store{"server": server, "cli": cli} {
			if got := hopDistances(t, s, q); !maps.Equal(got, st.want) {
				t.Errorf("%s, seen by %s: %v, want %v", st.name, name, got, st.want)
			}
		}
	}
}

// Walks run beside writes (go test -race): each sees a whole graph, and
// the last walk sees the last write.
func TestGraphWalksBesideWrites(t *testing.T) {
	s := openTemp(t)
	ctx := t.Context()
	const n = 50
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i < n; i++ {
			if _, err := s.Upsert(ctx, []h4r.Item{linked(fmt.Sprint("n", i-1), fmt.Sprint("n", i)), linked(fmt.Sprint("n", i))}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			for range n {
				hits, err := s.Graph().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"n0"}, MaxHops: n})
				if err != nil {
					t.Error(err)
					return
				}
				for i, h := range hits { // a chain: n0, n1, … without gaps
					if h.Item.ID != fmt.Sprint("n", i) || h.Distance != i {
						t.Errorf("hit %d is %s at %d, want n%d at %d", i, h.Item.ID, h.Distance, i, i)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if got := hopDistances(t, s, h4r.CandidateQuery{Anchors: []string{"n0"}, MaxHops: n, Targets: []string{fmt.Sprint("n", n-1)}}); got[fmt.Sprint("n", n-1)] != n-1 {
		t.Errorf("after the writes, the end of the chain is at %v, want %d", got, n-1)
	}
}
