package sqlite_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/store/sqlite"
)

func hashEmbedder(t testing.TB, opts ...embed.HashOption) *embed.Hash {
	t.Helper()
	h, err := embed.NewHash(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// vectorItems are short texts where the nearest neighbour of a query is
// clear to a person and reachable by hashed n-grams.
func vectorItems() []h4r.Item {
	return []h4r.Item{
		{ID: "opt", Kind: "note", Text: "query optimizer rewrites slow joins", Metadata: h4r.Metadata{Tags: []string{"db"}, Extra: map[string]any{"team": "data"}}},
		{ID: "login", Kind: "test_failure", Text: "login page button selector not found", Metadata: h4r.Metadata{Tags: []string{"ui", "flaky"}, Extra: map[string]any{"team": "qa"}}},
		{ID: "pay", Kind: "incident", Text: "payment gateway timeout during checkout", Metadata: h4r.Metadata{Tags: []string{"ui"}, Extra: map[string]any{"team": "qa", "severity": 2.0}}},
		{ID: "cache", Kind: "note", Text: "cache eviction policy for hot keys", Metadata: h4r.Metadata{Extra: map[string]any{"team": "data", "severity": 1.0}}},
	}
}

func ids(hits []h4r.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Item.ID
	}
	return out
}

func search(t *testing.T, s *sqlite.Store, e *embed.Hash, text string, f h4r.Filters, limit int, minScore float64) []h4r.Hit {
	t.Helper()
	hits, err := s.SearchVectors(t.Context(), e.Model(), e.Vector(text), f, limit, minScore)
	if err != nil {
		t.Fatalf("SearchVectors(%q): %v", text, err)
	}
	return hits
}

func TestSearchVectors(t *testing.T) {
	e := hashEmbedder(t)
	s := openVec(t, e)
	if _, err := s.Upsert(t.Context(), vectorItems()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		query    string
		filters  h4r.Filters
		limit    int
		minScore float64
		want     []string // a prefix of the hits, in order
		wantLen  int      // -1: do not check
	}{
		{name: "morphological variant ranks first", query: "optimizations of queries", want: []string{"opt"}, wantLen: -1},
		{name: "limit cuts", query: "selector timeout eviction optimizer", limit: 2, wantLen: 2},
		{name: "kind filter", query: "login page button", filters: h4r.Filters{Kinds: []string{"note"}}, wantLen: -1, want: nil},
		{name: "all tags required", query: "checkout login", filters: h4r.Filters{Tags: []string{"ui", "flaky"}}, want: []string{"login"}, wantLen: 1},
		{name: "metadata string filter", query: "cache keys", filters: h4r.Filters{Metadata: map[string]any{"team": "qa"}}, wantLen: -1},
		{name: "metadata number filter", query: "payment", filters: h4r.Filters{Metadata: map[string]any{"severity": 2.0}}, want: []string{"pay"}, wantLen: 1},
		{name: "high floor leaves only close texts", query: "login page button selector not found", minScore: 0.99, want: []string{"login"}, wantLen: 1},
		{name: "unrelated words find nothing above floor", query: "zebra xylophone", minScore: 0.2, wantLen: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits := search(t, s, e, tc.query, tc.filters, tc.limit, tc.minScore)
			got := ids(hits)
			if tc.wantLen >= 0 && len(got) != tc.wantLen {
				t.Fatalf("hits %v, want %d of them", got, tc.wantLen)
			}
			if len(got) < len(tc.want) || !slices.Equal(got[:len(tc.want)], tc.want) {
				t.Fatalf("hits %v, want them to start with %v", got, tc.want)
			}
			for i, h := range hits {
				if i > 0 && h.Score > hits[i-1].Score {
					t.Errorf("hits not best first: %v", hits)
				}
				if h.Score < tc.minScore {
					t.Errorf("hit %s scores %v, under the floor %v", h.Item.ID, h.Score, tc.minScore)
				}
			}
			// Every filtered hit passes the filter.
			for _, h := range hits {
				if len(tc.filters.Kinds) > 0 && !slices.Contains(tc.filters.Kinds, h.Item.Kind) {
					t.Errorf("hit %s has kind %s, filtered to %v", h.Item.ID, h.Item.Kind, tc.filters.Kinds)
				}
				if team, ok := tc.filters.Metadata["team"]; ok && h.Item.Metadata.Extra["team"] != team {
					t.Errorf("hit %s has team %v, filtered to %v", h.Item.ID, h.Item.Metadata.Extra["team"], team)
				}
			}
		})
	}
}

func TestSearchVectorsFollowsWrites(t *testing.T) {
	e := hashEmbedder(t)
	s := openVec(t, e)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, vectorItems()); err != nil {
		t.Fatal(err)
	}
	const q = "payment gateway timeout during checkout"
	if got := ids(search(t, s, e, q, h4r.Filters{}, 1, 0)); !slices.Equal(got, []string{"pay"}) {
		t.Fatalf("before: %v", got)
	}
	// New text: the old vector must not answer for it.
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "pay", Text: "mobile layout broken on small screens"}}); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, s, e, q, h4r.Filters{}, 10, 0.5)); slices.Contains(got, "pay") {
		t.Errorf("after rewrite, %v still finds the old text", got)
	}
	if got := ids(search(t, s, e, "mobile layout small screens", h4r.Filters{}, 1, 0)); !slices.Equal(got, []string{"pay"}) {
		t.Errorf("after rewrite, new text finds %v", got)
	}
	if err := s.Delete(ctx, "pay"); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, s, e, "mobile layout small screens", h4r.Filters{}, 10, 0)); slices.Contains(got, "pay") {
		t.Errorf("after delete, search still finds it: %v", got)
	}
	if n, err := s.MissingVectors(ctx, e.Model()); err != nil || n != 0 {
		t.Errorf("MissingVectors = %d, %v; want 0", n, err)
	}
}

// Two stores on one file stand for h4r serve and h4r ingest: each must see
// the other's writes and deletes (the generation counter).
func TestSearchVectorsSeesOtherProcess(t *testing.T) {
	e := hashEmbedder(t)
	path := filepath.Join(t.TempDir(), "h4r.db")
	server := openAt(t, path, sqlite.WithVectors(e))
	cli := openAt(t, path, sqlite.WithVectors(e))
	ctx := t.Context()
	if _, err := server.Upsert(ctx, vectorItems()[:2]); err != nil {
		t.Fatal(err)
	}
	search(t, server, e, "warm the memory", h4r.Filters{}, 10, -1) // loads the vectors in memory
	if _, err := cli.Upsert(ctx, vectorItems()[2:]); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, server, e, "cache eviction policy", h4r.Filters{}, 1, 0)); !slices.Equal(got, []string{"cache"}) {
		t.Fatalf("other process's insert: got %v", got)
	}
	if err := cli.Delete(ctx, "cache"); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, server, e, "cache eviction policy", h4r.Filters{}, 10, -1)); slices.Contains(got, "cache") || len(got) != 3 {
		t.Fatalf("other process's delete: got %v, want the 3 others", got)
	}
}

// flakyEmbedder fails while failing is set, else embeds with Hash.
type flakyEmbedder struct {
	*embed.Hash
	failing atomic.Bool
}

func (f *flakyEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.failing.Load() {
		return nil, errors.New("embeddings server down")
	}
	return f.Hash.Embed(ctx, texts)
}

func TestFailedEmbeddingKeepsItemsAndReindexRestores(t *testing.T) {
	f := &flakyEmbedder{Hash: hashEmbedder(t)}
	s := openVec(t, f)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, vectorItems()[:1]); err != nil {
		t.Fatal(err)
	}
	f.failing.Store(true)
	if _, err := s.Upsert(ctx, vectorItems()); err != nil {
		t.Fatalf("a failed embedding must not fail the write: %v", err)
	}
	if n, _ := s.Count(ctx); n != 4 {
		t.Fatalf("Count = %d, want 4 items stored", n)
	}
	if n, err := s.MissingVectors(ctx, f.Model()); err != nil || n != 4 {
		t.Fatalf("MissingVectors = %d, %v; want 4 (the rewritten item's old vector is dropped too)", n, err)
	}
	if got := search(t, s, f.Hash, "query optimizer", h4r.Filters{}, 10, -1); len(got) != 0 {
		t.Fatalf("search found %v without vectors", ids(got))
	}
	if _, err := s.ReindexVectors(ctx, nil); err == nil {
		t.Fatal("ReindexVectors succeeded with the embedder failing")
	}
	f.failing.Store(false)
	var progress []int
	n, err := s.ReindexVectors(ctx, func(done int) { progress = append(progress, done) })
	if err != nil || n != 4 || !slices.Equal(progress, []int{4}) {
		t.Fatalf("ReindexVectors = %d, %v, progress %v; want 4, nil, [4]", n, err, progress)
	}
	if got := ids(search(t, s, f.Hash, "query optimizer", h4r.Filters{}, 1, 0)); !slices.Equal(got, []string{"opt"}) {
		t.Fatalf("after reindex: %v", got)
	}
}

func TestReindexSwitchesModel(t *testing.T) {
	old, next := hashEmbedder(t, embed.WithHashDim(64)), hashEmbedder(t, embed.WithHashDim(128))
	path := filepath.Join(t.TempDir(), "h4r.db")
	ctx := t.Context()
	before := openAt(t, path, sqlite.WithVectors(old))
	if _, err := before.Upsert(ctx, vectorItems()); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path, sqlite.WithVectors(next))
	if n, _ := s.MissingVectors(ctx, next.Model()); n != 4 {
		t.Fatalf("MissingVectors(new model) = %d, want 4", n)
	}
	if got := search(t, s, next, "query optimizer", h4r.Filters{}, 10, -1); len(got) != 0 {
		t.Fatalf("vectors of another model answered: %v", ids(got))
	}
	if _, err := s.ReindexVectors(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, s, next, "query optimizer", h4r.Filters{}, 1, 0)); !slices.Equal(got, []string{"opt"}) {
		t.Fatalf("after reindex: %v", got)
	}
	if n, _ := s.MissingVectors(ctx, old.Model()); n != 4 {
		t.Errorf("old model's vectors not pruned: %d items miss them, want all 4", n)
	}
}

func TestSearchVectorsRejects(t *testing.T) {
	e := hashEmbedder(t)
	s := openVec(t, e)
	if _, err := s.Upsert(t.Context(), vectorItems()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		vector []float32
		limit  int
		field  string
	}{
		{"empty vector", nil, 0, "vector"},
		{"wrong dimension", make([]float32, 3), 0, "vector"},
		{"negative limit", e.Vector("x"), -1, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.SearchVectors(t.Context(), e.Model(), tc.vector, h4r.Filters{}, tc.limit, 0)
			var he *h4r.Error
			if !errors.As(err, &he) || he.Code != h4r.EINVALID || he.Field != tc.field {
				t.Fatalf("err = %v, want invalid_argument on %s", err, tc.field)
			}
		})
	}
}

// Equal scores come out in id order, whatever order the vectors are stored in.
func TestSearchVectorsTiesByID(t *testing.T) {
	e := hashEmbedder(t)
	s := openVec(t, e)
	var items []h4r.Item
	for _, id := range []string{"d", "b", "c", "a"} {
		items = append(items, h4r.Item{ID: id, Text: "identical text"})
	}
	if _, err := s.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, s, e, "identical text", h4r.Filters{}, 3, 0)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("got %v, want [a b c]", got)
	}
}

// openVec opens a store in a temporary directory that embeds with e.
func openVec(t testing.TB, e h4r.Embedder) *sqlite.Store {
	return openAt(t, filepath.Join(t.TempDir(), "h4r.db"), sqlite.WithVectors(e))
}

// A filtered search checks growing prefixes of the ranking against the
// filters; whatever the filter's selectivity, the answer is the exact top
// of the items that pass, as a brute-force scan finds it.
func TestSearchVectorsFilteredIsExact(t *testing.T) {
	e := hashEmbedder(t, embed.WithHashDim(64))
	s := openVec(t, e)
	c := newCorpus(11)
	items := c.items("it", 300, false)
	for i := range items {
		items[i].Kind = []string{"common", "common", "common", "uncommon", "rare"}[i%5]
		if i == 299 {
			items[i].Kind = "unique"
		}
	}
	if _, err := s.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	query := c.words(5)
	q := e.Vector(query)
	for _, tc := range []struct {
		name  string
		kinds []string
		limit int
	}{
		{"most pass", []string{"common"}, 10},
		{"a fifth pass", []string{"rare"}, 10},
		{"one passes", []string{"unique"}, 3},
		{"none pass", []string{"absent"}, 5},
		{"limit above the matches", []string{"rare", "unique"}, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.SearchVectors(t.Context(), e.Model(), q, h4r.Filters{Kinds: tc.kinds}, tc.limit, -1)
			if err != nil {
				t.Fatal(err)
			}
			type cand struct {
				id    string
				score float64
			}
			var want []cand
			for _, it := range items {
				if slices.Contains(tc.kinds, it.Kind) {
					want = append(want, cand{it.ID, float64(embed.Cosine(q, e.Vector(it.Text)))})
				}
			}
			slices.SortFunc(want, func(a, b cand) int {
				if a.score != b.score {
					if a.score > b.score {
						return -1
					}
					return 1
				}
				return strings.Compare(a.id, b.id)
			})
			want = want[:min(tc.limit, len(want))]
			if len(got) != len(want) {
				t.Fatalf("%d hits, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Item.ID != want[i].id && math.Abs(got[i].Score-want[i].score) > 1e-5 {
					t.Errorf("hit %d: %s (%.5f), brute force %s (%.5f)", i, got[i].Item.ID, got[i].Score, want[i].id, want[i].score)
				}
			}
		})
	}
}
