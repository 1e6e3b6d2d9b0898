package decision

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

// findPerArea is how prefetch read areas before findWithAreas: first,
// then one query per area, each item once at its first place. It is the
// reference findWithAreas must equal.
func findPerArea(ctx context.Context, store finder, first h4r.ItemQuery, base h4r.Filters, areas []string, limit int) ([]*h4r.Item, error) {
	queries := []h4r.ItemQuery{first}
	for _, a := range areas {
		f := base
		f.Tags = []string{a}
		queries = append(queries, h4r.ItemQuery{Filters: f, Limit: limit})
	}
	seen := map[string]bool{}
	var out []*h4r.Item
	for _, q := range queries {
		found, err := store.Find(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, it := range found {
			if !seen[it.ID] {
				seen[it.ID] = true
				out = append(out, it)
			}
		}
	}
	return out, nil
}

// countingFinder counts the queries asked of a store.
type countingFinder struct {
	inner   finder
	queries int
}

func (c *countingFinder) Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error) {
	c.queries++
	return c.inner.Find(ctx, q)
}

// TestFindWithAreasEqualsOneQueryPerArea proves findWithAreas equal to
// the query per area it replaces, on a real SQLite store with random
// commit traces and decision traces: random tags (areas), repos, project
// keys and creation times with ties (so that the id breaks them), and
// random area lists (repeated, unknown, not UTF-8), with per-query limits
// small enough that areas overflow them (an area asked alone) and large
// enough that one query answers all. It also checks that the one-query
// path was taken.
func TestFindWithAreasEqualsOneQueryPerArea(t *testing.T) {
	ctx := t.Context()
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h4r.db"), sqlite.WithTokenCounter(counter), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := rand.New(rand.NewPCG(15, 3))
	areas := []string{"pkg/auth", "pkg/store", "cmd/server", "pkg/api", "a b"}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var items []h4r.Item
	for i := range 240 {
		it := h4r.Item{ID: fmt.Sprintf("i%03d-%d", r.IntN(1000), i), Text: fmt.Sprintf("item %d", i)}
		repo := []string{"org/a", "org/b"}[r.IntN(2)]
		if r.IntN(2) == 0 {
			it.Kind = KindCommitTrace
			it.Metadata.Extra = map[string]any{"repo": repo}
		} else {
			it.Kind = KindTrace
			it.Metadata.Extra = map[string]any{"project_key": repo}
		}
		for _, a := range areas {
			if r.IntN(3) == 0 {
				it.Metadata.Tags = append(it.Metadata.Tags, a)
			}
		}
		it.Metadata.CreatedAt = base.Add(time.Duration(r.IntN(30)) * time.Hour) // ties
		items = append(items, it)
	}
	if _, err := st.Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	oneQuery := 0
	for _, limit := range []int{1, 3, 10, 500} {
		for round := range 30 {
			var asked []string
			for range r.IntN(5) {
				switch r.IntN(8) {
				case 0:
					asked = append(asked, "nope")
				case 1:
					asked = append(asked, "pkg/\xffbad")
				default:
					asked = append(asked, areas[r.IntN(len(areas))])
				}
			}
			repo := []string{"org/a", "org/b"}[r.IntN(2)]
			for _, shape := range []struct {
				name  string
				first h4r.ItemQuery
				base  h4r.Filters
			}{
				{"commit traces", h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindCommitTrace}, Metadata: map[string]any{"repo": repo}}, Limit: limit},
					h4r.Filters{Kinds: []string{KindCommitTrace}, Metadata: map[string]any{"repo": repo}}},
				{"decision traces", h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{KindTrace}, Metadata: map[string]any{"project_key": repo}}, Limit: limit},
					h4r.Filters{Kinds: []string{KindTrace}}},
			} {
				want, err := findPerArea(ctx, st, shape.first, shape.base, asked, limit)
				if err != nil {
					t.Fatal(err)
				}
				cf := &countingFinder{inner: st}
				got, err := findWithAreas(ctx, cf, shape.first, shape.base, asked, limit)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(itemIDs(got), itemIDs(want)) {
					t.Errorf("limit %d, round %d, %s, areas %q:\n got %v\nwant %v", limit, round, shape.name, asked, itemIDs(got), itemIDs(want))
				}
				if len(asked) > 1 && cf.queries == 2 {
					oneQuery++
				}
			}
		}
	}
	if oneQuery == 0 {
		t.Error("no request of several areas was answered by one query for all of them")
	}
}

func itemIDs(items []*h4r.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ID
	}
	return out
}
