package qdrant_test

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	qc "github.com/qdrant/go-client/qdrant"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/store/qdrant"
	"github.com/h4r/h4r/store/qdrant/qdranttest"
	"github.com/h4r/h4r/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

func hash(t *testing.T, opts ...embed.HashOption) *embed.Hash {
	t.Helper()
	h, err := embed.NewHash(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// openStore opens a real SQLite store; with e it also keeps its own vectors,
// the reference the Qdrant search is compared with.
func openStore(t *testing.T, e h4r.Embedder) *sqlite.Store {
	t.Helper()
	opts := []sqlite.Option{sqlite.WithLogger(quiet)}
	if e != nil {
		opts = append(opts, sqlite.WithVectors(e))
	}
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "h4r.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openIndex(t *testing.T, url string, dim int, store qdrant.ItemGetter, opts ...qdrant.Option) *qdrant.Index {
	t.Helper()
	ix, err := qdrant.Open(t.Context(), url, append([]qdrant.Option{
		qdrant.WithDimension(dim), qdrant.WithItems(store), qdrant.WithLogger(quiet),
	}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func newMirror(t *testing.T, ix *qdrant.Index, e h4r.Embedder, store qdrant.ItemGetter) *qdrant.Mirror {
	t.Helper()
	m, err := qdrant.NewMirror(ix, e, store, qdrant.WithMirrorLogger(quiet), qdrant.WithRetryInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(t.Context()) })
	return m
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func filterItems() []h4r.Item {
	return []h4r.Item{
		{ID: "a", Kind: "test_failure", Text: "login button selector missing on the page",
			Metadata: h4r.Metadata{CreatedAt: at("2026-11-01T00:00:00Z"), Tags: []string{"ui", "flaky"}, Extra: map[string]any{"status": "failed", "retries": 2.0, "blocking": true}}},
		{ID: "b", Kind: "test_failure", Text: "login form timeout after submit",
			Metadata: h4r.Metadata{CreatedAt: at("2026-11-10T00:00:00Z"), Tags: []string{"ui"}, Extra: map[string]any{"status": "passed", "retries": 0.0, "blocking": false}}},
		{ID: "c", Kind: "fix", Text: "login selector replaced by data-testid",
			Metadata: h4r.Metadata{CreatedAt: at("2026-11-20T00:00:00Z"), Tags: []string{"flaky"}, Extra: map[string]any{"status": "failed", "retries": "2"}}},
		{ID: "d", Kind: "incident", Text: "login outage during deploy",
			Metadata: h4r.Metadata{CreatedAt: at("2026-11-15T12:00:00Z"), Extra: map[string]any{"status": "1"}}},
	}
}

// The same filters on Qdrant (through the payload filter the fake server
// evaluates) and on the SQLite store's own exact search find the same
// items: the payload filter is equivalent to the request's filters.
func TestSearchFiltersMatchTheStore(t *testing.T) {
	f, url := qdranttest.Start(t)
	e := hash(t, embed.WithHashDim(64))
	store := openStore(t, e)
	ctx := t.Context()
	if _, err := store.Upsert(ctx, filterItems()); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, url, 64, store)
	if err := newMirror(t, ix, e, store).Sync(ctx, []string{"a", "b", "c", "d"}); err != nil {
		t.Fatal(err)
	}
	if n := f.PointCount("h4r_items"); n != 4 {
		t.Fatalf("%d points, want 4", n)
	}
	if n, err := ix.PointCount(ctx); err != nil || n != 4 {
		t.Fatalf("Index.PointCount = %d, %v; want 4 (GET /v1/stats reports it)", n, err)
	}
	store.RecordAccess([]string{"b"})
	for _, tc := range []struct {
		name    string
		filters h4r.Filters
		want    []string
	}{
		{"no filter", h4r.Filters{}, []string{"a", "b", "c", "d"}},
		{"one kind", h4r.Filters{Kinds: []string{"fix"}}, []string{"c"}},
		{"any of kinds", h4r.Filters{Kinds: []string{"fix", "incident"}}, []string{"c", "d"}},
		{"one tag", h4r.Filters{Tags: []string{"flaky"}}, []string{"a", "c"}},
		{"all tags required", h4r.Filters{Tags: []string{"flaky", "ui"}}, []string{"a"}},
		{"any of two tags", h4r.Filters{AnyTags: []string{"flaky", "ui"}}, []string{"a", "b", "c"}},
		{"any tag, one unknown", h4r.Filters{AnyTags: []string{"nope", "flaky"}}, []string{"a", "c"}},
		{"any tag, all unknown", h4r.Filters{AnyTags: []string{"nope"}}, nil},
		{"all tags and any tag", h4r.Filters{Tags: []string{"ui"}, AnyTags: []string{"flaky", "nope"}}, []string{"a"}},
		{"created after is inclusive", h4r.Filters{CreatedAfter: at("2026-11-10T00:00:00Z")}, []string{"b", "c", "d"}},
		{"created before is exclusive", h4r.Filters{CreatedBefore: at("2026-11-10T00:00:00Z")}, []string{"a"}},
		{"range", h4r.Filters{CreatedAfter: at("2026-11-05T00:00:00Z"), CreatedBefore: at("2026-11-20T00:00:00Z")}, []string{"b", "d"}},
		{"string equality", h4r.Filters{Metadata: map[string]any{"status": "failed"}}, []string{"a", "c"}},
		{"number equality is not string", h4r.Filters{Metadata: map[string]any{"retries": 2.0}}, []string{"a"}},
		{"string is not number", h4r.Filters{Metadata: map[string]any{"retries": "2"}}, []string{"c"}},
		{"number zero", h4r.Filters{Metadata: map[string]any{"retries": 0.0}}, []string{"b"}},
		{"bool true", h4r.Filters{Metadata: map[string]any{"blocking": true}}, []string{"a"}},
		{"bool false is not absent", h4r.Filters{Metadata: map[string]any{"blocking": false}}, []string{"b"}},
		{"numeric-looking string", h4r.Filters{Metadata: map[string]any{"status": "1"}}, []string{"d"}},
		{"missing key", h4r.Filters{Metadata: map[string]any{"owner": "x"}}, nil},
		{"combined", h4r.Filters{Kinds: []string{"test_failure", "fix"}, Tags: []string{"flaky"}, Metadata: map[string]any{"status": "failed"}}, []string{"a", "c"}},
		{"well-known key", h4r.Filters{Metadata: map[string]any{"containsPII": false}}, []string{"a", "b", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := e.Vector("login")
			got, err := ix.SearchVectors(ctx, e.Model(), q, tc.filters, 100, -1)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := store.SearchVectors(ctx, e.Model(), q, tc.filters, 100, -1)
			if err != nil {
				t.Fatal(err)
			}
			gotIDs, refIDs := sortedIDs(got), sortedIDs(ref)
			if !slices.Equal(gotIDs, tc.want) {
				t.Errorf("Qdrant found %v, want %v", gotIDs, tc.want)
			}
			if !slices.Equal(gotIDs, refIDs) {
				t.Errorf("Qdrant found %v, the store's exact search %v", gotIDs, refIDs)
			}
		})
	}
}

func sortedIDs(hits []h4r.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Item.ID)
	}
	slices.Sort(out)
	return out
}

// Ranking, limit and score threshold are sent to Qdrant; hits come back as
// the store's current items.
func TestSearchRanksAndThresholds(t *testing.T) {
	_, url := qdranttest.Start(t)
	e := hash(t, embed.WithHashDim(64))
	store := openStore(t, e)
	ctx := t.Context()
	if _, err := store.Upsert(ctx, filterItems()); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, url, 64, store)
	if err := newMirror(t, ix, e, store).Sync(ctx, []string{"a", "b", "c", "d"}); err != nil {
		t.Fatal(err)
	}
	q := e.Vector("login selector data-testid")
	ref, err := store.SearchVectors(ctx, e.Model(), q, h4r.Filters{}, 2, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ix.SearchVectors(ctx, e.Model(), q, h4r.Filters{}, 2, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ref) || len(got) == 0 {
		t.Fatalf("Qdrant %d hits, store %d", len(got), len(ref))
	}
	for i := range got {
		if got[i].Item.ID != ref[i].Item.ID || got[i].Score < 0.2 || got[i].Score-ref[i].Score > 1e-5 || ref[i].Score-got[i].Score > 1e-5 {
			t.Errorf("hit %d: Qdrant %s %.4f, store %s %.4f", i, got[i].Item.ID, got[i].Score, ref[i].Item.ID, ref[i].Score)
		}
		if got[i].Item.Metadata.Version != 1 || got[i].Item.Text == "" {
			t.Errorf("hit %d is not the store's item: %+v", i, got[i].Item)
		}
	}
	// Points of another model never answer.
	if hits, err := ix.SearchVectors(ctx, "other-model", q, h4r.Filters{}, 10, -1); err != nil || len(hits) != 0 {
		t.Errorf("search for another model: %d hits, %v", len(hits), err)
	}
}

func TestBootstrap(t *testing.T) {
	f, url := qdranttest.Start(t)
	store := openStore(t, nil)
	openIndex(t, url, 32, store, qdrant.WithAPIKey("secret"), qdrant.WithCollection("mem"))
	c := f.Collections["mem"]
	if c == nil || c.Size != 32 || c.Distance != qc.Distance_Cosine {
		t.Fatalf("collection %+v, want 32 dimensions, cosine", c)
	}
	for _, field := range []string{"h4r_model", "kind", "tags", "createdAt"} {
		if _, ok := c.Indexed[field]; !ok {
			t.Errorf("payload field %s not indexed", field)
		}
	}
	if !slices.Contains(f.APIKeys, "secret") {
		t.Errorf("api-key header not sent: %q", f.APIKeys)
	}
	// Reopening with the same dimension uses the collection as it is.
	openIndex(t, url, 32, store, qdrant.WithCollection("mem"))

	for _, tc := range []struct {
		name, url string
		dim       int
		prepare   func()
		wantErr   string
	}{
		{"other dimension refused", url, 64, nil, "holds vectors of 32 dimensions, but the embedder makes 64"},
		{"other distance refused", url, 32, func() { f.Collections["mem"].Distance = qc.Distance_Euclid }, "uses Euclid distance"},
		{"bad URL", "localhost:6334", 32, nil, "QDRANT_URL"},
		{"zero dimension", url, 0, nil, "dimension"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				f.Mu.Lock()
				tc.prepare()
				f.Mu.Unlock()
			}
			_, err := qdrant.Open(t.Context(), tc.url, qdrant.WithDimension(tc.dim), qdrant.WithCollection("mem"), qdrant.WithLogger(quiet))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

// A failed mirror write leaves the item in the store and its id pending;
// the retry writes the store's latest version, and a delete meanwhile
// deletes the point.
func TestMirrorRetries(t *testing.T) {
	f, url := qdranttest.Start(t)
	e := hash(t, embed.WithHashDim(64))
	store := openStore(t, nil)
	ctx := t.Context()
	ix := openIndex(t, url, 64, store)
	m := newMirror(t, ix, e, store)
	items := filterItems()
	if _, err := store.Upsert(ctx, items[:2]); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	f.FailUpserts = 1
	f.Mu.Unlock()
	if err := m.Sync(ctx, []string{"a", "b"}); err == nil {
		t.Fatal("Sync succeeded while Qdrant failed")
	}
	if m.Pending() != 2 || f.PointCount("h4r_items") != 0 {
		t.Fatalf("pending %d, points %d; want 2 pending, 0 points", m.Pending(), f.PointCount("h4r_items"))
	}
	// While pending: a is rewritten, b is deleted.
	if _, err := store.Upsert(ctx, []h4r.Item{{ID: "a", Kind: "fix", Text: "rewritten"}}); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if m.Pending() != 0 || f.PointCount("h4r_items") != 1 {
		t.Fatalf("after flush: pending %d, points %d; want 0 and 1", m.Pending(), f.PointCount("h4r_items"))
	}
	hits, err := ix.SearchVectors(ctx, e.Model(), e.Vector("rewritten"), h4r.Filters{Kinds: []string{"fix"}}, 10, 0.5)
	if err != nil || len(hits) != 1 || hits[0].Item.ID != "a" {
		t.Fatalf("the retry did not write the latest version: %v, %v", sortedIDs(hits), err)
	}
	// A delete mirrored right away.
	if err := store.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx, []string{"a"}); err != nil || f.PointCount("h4r_items") != 0 {
		t.Fatalf("delete: %v, %d points left", err, f.PointCount("h4r_items"))
	}
}

func TestMirrorPendingIsCapped(t *testing.T) {
	f, url := qdranttest.Start(t)
	e := hash(t, embed.WithHashDim(64))
	store := openStore(t, nil)
	ix := openIndex(t, url, 64, store)
	m, err := qdrant.NewMirror(ix, e, store, qdrant.WithMaxPending(2), qdrant.WithMirrorLogger(quiet), qdrant.WithRetryInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(t.Context())
	if _, err := store.Upsert(t.Context(), filterItems()); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	f.FailUpserts = 1
	f.Mu.Unlock()
	if err := m.Sync(t.Context(), []string{"a", "b", "c"}); err == nil || m.Pending() != 2 {
		t.Fatalf("err %v, pending %d; want an error and 2 pending", err, m.Pending())
	}
}

// Rebuild writes every item of the store and drops other models' points.
func TestRebuild(t *testing.T) {
	f, url := qdranttest.Start(t)
	old, e := hash(t, embed.WithHashDim(64), embed.WithCharNGrams(2, 3)), hash(t, embed.WithHashDim(64))
	store := openStore(t, nil)
	ctx := t.Context()
	if _, err := store.Upsert(ctx, filterItems()); err != nil {
		t.Fatal(err)
	}
	ix := openIndex(t, url, 64, store)
	if err := newMirror(t, ix, old, store).Sync(ctx, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	var progress []int
	n, err := newMirror(t, ix, e, store).Rebuild(ctx, store.Each, func(done int) { progress = append(progress, done) })
	if err != nil || n != 4 || !slices.Equal(progress, []int{4}) {
		t.Fatalf("Rebuild = %d, %v, progress %v", n, err, progress)
	}
	if c := f.PointCount("h4r_items"); c != 4 {
		t.Fatalf("%d points, want 4 (old model's replaced, none left over)", c)
	}
	hits, err := ix.SearchVectors(ctx, e.Model(), e.Vector("login"), h4r.Filters{}, 10, -1)
	if err != nil || len(hits) != 4 {
		t.Fatalf("%d hits, %v", len(hits), err)
	}
}

func TestSearchErrors(t *testing.T) {
	f, url := qdranttest.Start(t)
	store := openStore(t, nil)
	ix := openIndex(t, url, 8, store)
	if _, err := ix.SearchVectors(t.Context(), "m", make([]float32, 3), h4r.Filters{}, 10, 0); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Errorf("wrong dimension: %v", err)
	}
	f.Mu.Lock()
	f.FailQueries = 1
	f.Mu.Unlock()
	_, err := ix.SearchVectors(t.Context(), "m", make([]float32, 8), h4r.Filters{}, 10, 0)
	if err == nil || !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("server failure: %v", err)
	}
}

func TestPointID(t *testing.T) {
	a, b := qdrant.PointID("tf-login"), qdrant.PointID("tf-login ")
	if a == b || a != qdrant.PointID("tf-login") {
		t.Fatalf("PointID not a function of the id: %s %s", a, b)
	}
	if len(a) != 36 || a[14] != '5' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Fatalf("%s is not a version-5 UUID", a)
	}
}
