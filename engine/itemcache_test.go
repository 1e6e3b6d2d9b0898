package engine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/internal/pgtest"
)

// openDemoWith is openDemo with a changed configuration.
func openDemoWith(tb testing.TB, change func(*config.Config)) *app.App {
	tb.Helper()
	cfg := testConfig(tb)
	change(&cfg)
	a, err := app.Open(context.Background(), cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	if n, err := demo.LoadIfEmpty(context.Background(), a.Store); err != nil || n == 0 {
		tb.Fatalf("loading the demo corpus: %d items, %v", n, err)
	}
	return a
}

// packJSON is what a pack says about its items, without timings.
func packJSON(t *testing.T, p *h4r.Pack) string {
	t.Helper()
	b, err := json.Marshal(struct {
		Status     string
		Results    []h4r.Result
		Items      []h4r.ItemExplanation
		AgentSlice h4r.AgentSlice
	}{p.Status, p.Results, p.Explainability.Items, p.AgentSlice})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPacksSameWithAndWithoutItemCache proves the store's item cache (the
// fast path, H4R_ITEM_CACHE_MB) gives the packs the uncached reads give,
// redacted items included, the first time (cache filling) and the second
// (answered from it); and that redacting a pack leaves the cached items as
// they were stored. On both stores: each has a cache of its own.
func TestPacksSameWithAndWithoutItemCache(t *testing.T) {
	stores := []struct {
		name  string
		store func(t *testing.T) func(*config.Config)
	}{
		{"embedded", func(*testing.T) func(*config.Config) { return func(*config.Config) {} }},
		{"postgres", func(t *testing.T) func(*config.Config) {
			return func(c *config.Config) { c.DatabaseURL = pgtest.Schema(t, "h4r_engine_cache") }
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			store := st.store(t)
			cached := openDemoWith(t, store)
			uncached := openDemoWith(t, func(c *config.Config) { store(c); c.ItemCacheMB = 0 })
			packsSameWithAndWithoutCache(t, cached, uncached)
		})
	}
}

func packsSameWithAndWithoutCache(t *testing.T, cached, uncached *app.App) {
	queries := []string{
		"login test failures with selector issues", "checkout payment iframe flaky", "CI retries decision",
		"storage state expired session", "customer email personal data", "staging 502 incident",
	}
	redacted := 0
	for _, q := range queries {
		t.Run(q, func(t *testing.T) {
			req := h4r.ContextRequest{Query: h4r.Query{Text: q}}
			want := auditPack(t, uncached.Engine, healer(), req)
			for round := range 2 {
				got := auditPack(t, cached.Engine, healer(), req)
				if g, w := packJSON(t, got), packJSON(t, want); g != w {
					t.Errorf("round %d: the pack through the cache differs:\n got %s\nwant %s", round, g, w)
				}
				if round == 0 {
					for _, r := range got.Results {
						if r.Metadata.Redacted {
							redacted++
						}
					}
				}
			}
		})
	}
	if redacted == 0 {
		t.Fatal("no pack redacted an item: the redaction check below proves nothing")
	}

	// The items the generators hand out (from the cache now) are the
	// stored ones, unredacted.
	stored, err := demo.Items()
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]h4r.Item{}
	for _, it := range stored {
		byID[it.ID] = it
	}
	checked := 0
	for _, q := range queries {
		hits, err := cached.Store.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			orig, ok := byID[h.Item.ID]
			if !ok || !orig.Metadata.ContainsPII {
				continue
			}
			checked++
			if h.Item.Text != orig.Text || !reflect.DeepEqual(h.Item.Content, orig.Content) {
				t.Errorf("cached %s after packs: text %q content %v; stored text %q content %v", h.Item.ID, h.Item.Text, h.Item.Content, orig.Text, orig.Content)
			}
		}
	}
	if checked == 0 {
		t.Error("no cached item with PII was checked")
	}
}
