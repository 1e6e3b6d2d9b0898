package embed_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/store/sqlite"
)

// brokenEmbedder fails every call, as an unreachable server does.
type brokenEmbedder struct{}

func (brokenEmbedder) Model() string { return "broken" }
func (brokenEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("connection refused")
}

// storeWith opens a real SQLite store embedding with e and holding items.
func storeWith(t *testing.T, e h4r.Embedder, items []h4r.Item) *sqlite.Store {
	return storeWithTB(t, e, items)
}

func storeWithTB(t testing.TB, e h4r.Embedder, items []h4r.Item) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "h4r.db"),
		sqlite.WithVectors(e), sqlite.WithLogger(slog.New(slog.DiscardHandler)),
		// Loading fixtures, not testing the deadline: a 500-item batch
		// embedded under -race on a loaded machine takes seconds.
		sqlite.WithWriteTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for start := 0; start < len(items) || start == 0; start += 500 {
		if _, err := s.Upsert(t.Context(), items[start:min(start+500, len(items))]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

var generatorItems = []h4r.Item{
	{ID: "opt", Kind: "note", Text: "query optimizer rewrites slow joins"},
	{ID: "login", Kind: "test_failure", Text: "login page button selector not found"},
	{ID: "pay", Kind: "incident", Text: "payment gateway timeout during checkout"},
}

func hitIDs(hits []h4r.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Item.ID)
	}
	return out
}

func TestGenerator(t *testing.T) {
	h := newHash(t)
	s := storeWith(t, h, generatorItems)
	g, err := embed.NewGenerator(h, s, embed.WithFallback(s.FullText()))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name() != h4r.GenVector {
		t.Fatalf("Name = %s", g.Name())
	}
	for _, tc := range []struct {
		name string
		q    h4r.CandidateQuery
		want []string
	}{
		{"nearest first", h4r.CandidateQuery{Text: "optimizing queries", Limit: 1}, []string{"opt"}},
		{"filters pass through", h4r.CandidateQuery{Text: "optimizing queries", Filters: h4r.Filters{Kinds: []string{"incident"}}}, nil},
		{"floor leaves unrelated out", h4r.CandidateQuery{Text: "zebra"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := g.Generate(t.Context(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			got := hitIDs(hits)
			if len(tc.want) == 0 {
				for _, h := range hits {
					if tc.q.Filters.Kinds != nil && h.Item.Kind != "incident" || h.Score < embed.DefaultMinScore {
						t.Errorf("unexpected hit %s (%s, %.3f)", h.Item.ID, h.Item.Kind, h.Score)
					}
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("hits %v, want %v", got, tc.want)
			}
		})
	}
}

func TestGeneratorMaxHits(t *testing.T) {
	h := newHash(t)
	s := storeWith(t, h, generatorItems)
	g, err := embed.NewGenerator(h, s, embed.WithMaxHits(2), embed.WithMinScore(-1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		limit int
		want  int
	}{
		{"no limit takes the cap", 0, 2},
		{"larger limit is capped", 100, 2},
		{"smaller limit stays", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := g.Generate(t.Context(), h4r.CandidateQuery{Text: "login", Limit: tc.limit})
			if err != nil || len(hits) != tc.want {
				t.Fatalf("%d hits, %v; want %d", len(hits), err, tc.want)
			}
		})
	}
}

// A failed embedding answers from full-text search with a FallbackError
// (the engine turns it into a warning); without fallback it is an error.
func TestGeneratorDegradesToFullText(t *testing.T) {
	s := storeWith(t, newHash(t), generatorItems)
	q := h4r.CandidateQuery{Text: "payment timeout"}
	g, err := embed.NewGenerator(brokenEmbedder{}, s, embed.WithFallback(s.FullText()))
	if err != nil {
		t.Fatal(err)
	}
	hits, err := g.Generate(t.Context(), q)
	var fe *h4r.FallbackError
	if !errors.As(err, &fe) || fe.Fallback != "fulltext search" {
		t.Fatalf("err = %v, want a FallbackError naming full-text search", err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"pay"}) {
		t.Fatalf("fallback hits %v, want the full-text hit [pay]", got)
	}
	bare, err := embed.NewGenerator(brokenEmbedder{}, s)
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := bare.Generate(t.Context(), q); err == nil || errors.As(err, &fe) || hits != nil {
		t.Fatalf("without fallback: hits %v, err %v; want a plain error", hitIDs(hits), err)
	}
}

// A slow embedding server: the query's deadline expires, full-text answers.
func TestGeneratorSlowEmbedding(t *testing.T) {
	s := storeWith(t, newHash(t), generatorItems)
	_, url := newEmbeddingsServer(t, reply{hang: true}, reply{hang: true}, reply{hang: true}, reply{hang: true})
	slow, err := embed.NewOpenAI(url, "m", embed.WithTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	g, err := embed.NewGenerator(slow, s, embed.WithFallback(s.FullText()), embed.WithQueryTimeout(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	hits, err := g.Generate(t.Context(), h4r.CandidateQuery{Text: "login selector"})
	var fe *h4r.FallbackError
	if !errors.As(err, &fe) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a FallbackError wrapping the deadline", err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"login"}) {
		t.Fatalf("hits %v, want [login]", got)
	}
}

func TestNewGeneratorRejects(t *testing.T) {
	h := newHash(t)
	s := storeWith(t, h, nil)
	for _, tc := range []struct {
		name string
		opt  embed.GeneratorOption
	}{
		{"zero timeout", embed.WithQueryTimeout(0)},
		{"negative max hits", embed.WithMaxHits(-1)},
		{"floor above 1", embed.WithMinScore(1.5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := embed.NewGenerator(h, s, tc.opt); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := embed.NewGenerator(nil, s); err == nil {
		t.Fatal("nil embedder accepted")
	}
}
