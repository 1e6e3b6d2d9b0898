package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/index/itemcache"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// cacheItems are linked items that all match the query "shared", with
// content, tags and extra metadata, so that every decoded part is compared.
func cacheItems() []h4r.Item {
	var items []h4r.Item
	for i := range 8 {
		id := fmt.Sprintf("c%d", i)
		items = append(items, h4r.Item{
			ID: id, Kind: "note",
			Text:    fmt.Sprintf("shared note %d about flaky login selectors and cache number %d", i, i*7),
			Content: map[string]any{"n": float64(i), "nested": map[string]any{"email": fmt.Sprintf("u%d@example.com", i)}},
			Links:   []h4r.Link{{Target: fmt.Sprintf("c%d", (i+1)%8), Type: "caused_by"}},
			Metadata: h4r.Metadata{
				Tags:  []string{"t", id},
				Extra: map[string]any{"team": "qa", "rank": float64(i)},
			},
		})
	}
	return items
}

// searchAll runs the three generators that read through the item cache.
func searchAll(t *testing.T, s *Store, e *embed.Hash) map[string][]h4r.Hit {
	t.Helper()
	ctx := t.Context()
	out := map[string][]h4r.Hit{}
	var err error
	if out["fulltext"], err = s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared flaky login"}); err != nil {
		t.Fatal(err)
	}
	if out["vector"], err = s.SearchVectors(ctx, e.Model(), e.Vector("shared flaky login"), h4r.Filters{}, 100, -1); err != nil {
		t.Fatal(err)
	}
	if out["graph"], err = s.Graph().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"c0", "c3"}, MaxHops: 3}); err != nil {
		t.Fatal(err)
	}
	if out["filtered"], err = s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared", Filters: h4r.Filters{Metadata: map[string]any{"team": "qa"}}}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestItemCacheServesWhatTheFileHolds proves the cached read path equal to
// the uncached one (a second store on the same file, as another process,
// with the cache off) after every kind of write, by this process and by
// the other one: the entries cached before each write must not be served
// after it. Without the stamp check (an entry trusted by id alone) the
// steps of the other process fail; "delete and re-create" is the
// leak a stale cache would cause (a secret delivered from a stale copy).
func TestItemCacheServesWhatTheFileHolds(t *testing.T) {
	s, path, e := newHashVectorStore(t)
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(t.Context(), path, WithTokenCounter(counter), WithLogger(discardLogger()), WithVectors(e), WithItemCacheBytes(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	raw := rawDB(t, path)
	if _, err := s.Upsert(t.Context(), cacheItems()); err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := raw.ExecContext(ctx, q, args...); return err }
	}
	upsert := func(st *Store, it h4r.Item) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := st.Upsert(ctx, []h4r.Item{it}); return err }
	}
	changed := cacheItems()[1]
	changed.Content = map[string]any{"n": "changed"}
	changed.Text = "shared login flaky words rewritten so that its vector moves"
	secret := cacheItems()[2]
	secret.Content = map[string]any{"password": "hunter2"}
	secret.Metadata.HasCredentials = true
	relinked := cacheItems()[4]
	relinked.Links = []h4r.Link{{Target: "c7", Type: "fixes"}}
	retagged := cacheItems()[5]
	retagged.Metadata.Extra = map[string]any{"team": "data"}

	accessed := func(id string, n int64, last time.Time) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return s.flushAccess(ctx, map[string]sqlkit.AccessPending{id: {Count: n, Last: last}})
		}
	}
	steps := []struct {
		name  string
		write func(ctx context.Context) error
		local bool // written by this process: the cache follows it without starting over
	}{
		{"nothing written", func(context.Context) error { return nil }, true},
		{"text and content changed by this process", upsert(s, changed), true},
		{"access counted by this process", accessed("c5", 2, time.Date(2026, 2, 3, 4, 5, 6, 789, time.UTC)), true},
		{"access counted by this process, earlier", accessed("c5", 1, time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC)), true},
		{"metadata changed by another process", upsert(other, retagged), false},
		{"access counted by another process", exec(`UPDATE items SET access_count = access_count + 3, last_accessed_at = ? WHERE id = 'c3'`, formatTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))), false},
		{"access counted again", exec(`UPDATE items SET access_count = access_count + 1 WHERE id = 'c3'`), false},
		{"tokens recounted by another process", exec(`UPDATE items SET tokens = tokens + 1 WHERE id = 'c6'`), false},
		{"delete and re-create by another process", func(ctx context.Context) error {
			if err := other.Delete(ctx, "c2"); err != nil {
				return err
			}
			_, err := other.Upsert(ctx, []h4r.Item{secret})
			return err
		}, false},
		{"links changed by another process", upsert(other, relinked), false},
		{"deleted by another process", func(ctx context.Context) error { return other.Delete(ctx, "c7") }, false},
		{"deleted by this process", func(ctx context.Context) error { return s.Delete(ctx, "c0") }, true},
		{"deleted and re-created by this process", func(ctx context.Context) error {
			if err := s.Delete(ctx, "c1"); err != nil {
				return err
			}
			again := secret
			again.ID = "c1"
			_, err := s.Replace(ctx, []h4r.Item{again}, []string{"c6"})
			return err
		}, true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			searchAll(t, s, e) // fills the cache with the state before the write
			if err := st.write(t.Context()); err != nil {
				t.Fatal(err)
			}
			if st.local {
				var gen int64
				if err := raw.QueryRowContext(t.Context(), `SELECT generation FROM item_generation`).Scan(&gen); err != nil {
					t.Fatal(err)
				}
				if c := s.items.generation(); c != gen || s.items.len() == 0 {
					t.Errorf("after a write of this process the cache is at generation %d with %d items, the file at %d", c, s.items.len(), gen)
				}
			}
			want := searchAll(t, other, e)
			if !st.local {
				// While a write of this process is under way the cache
				// cannot start over: each entry is checked against its row.
				checkEntryByEntry(t, s)
			}
			got := searchAll(t, s, e)
			for name := range want {
				if len(want[name]) == 0 {
					t.Errorf("%s: no hits: the comparison proves nothing", name)
				}
				if !reflect.DeepEqual(got[name], want[name]) {
					t.Errorf("%s through the cache differs from the file:\n got %s\nwant %s", name, describe(got[name]), describe(want[name]))
				}
			}
		})
	}

	// The cache was used: an unchanged item is the same value twice.
	first, second := searchAll(t, s, e)["fulltext"], searchAll(t, s, e)["fulltext"]
	if s.items.len() == 0 || len(first) == 0 || first[0].Item != second[0].Item {
		t.Errorf("the cache holds %d items and did not answer a repeated search", s.items.len())
	}
}

func describe(hits []h4r.Hit) string {
	out := ""
	for _, h := range hits {
		out += fmt.Sprintf("\n  %s v%d score %.4f dist %d access %d tokens %d content %v links %v extra %v", h.Item.ID, h.Item.Metadata.Version,
			h.Score, h.Distance, h.Item.Metadata.AccessCount, h.Item.Metadata.Tokens, h.Item.Content, h.Item.Links, h.Item.Metadata.Extra)
	}
	return out
}

// TestItemCacheStaysWithinItsBudget fills a small cache past its budget.
func TestItemCacheStaysWithinItsBudget(t *testing.T) {
	tests := []struct {
		name   string
		budget int64
		items  int
	}{
		{"off", 0, 100},
		{"under budget", 1 << 20, 100},
		{"over budget", 64 << 10, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newItemCache(tt.budget)
			var ids []string
			read := map[string]*h4r.Item{}
			for i := range tt.items {
				it := &h4r.Item{ID: fmt.Sprintf("i%d", i), Text: "some text of an item", Metadata: h4r.Metadata{ByteSize: 100, Version: 1}}
				if i%2 == 0 {
					c.put(-1, it)
				} else { // as a read keeps what it fetched
					ids = append(ids, it.ID)
					read[it.ID] = it
				}
			}
			c.putAll(-1, ids, read)
			if c.used > tt.budget {
				t.Errorf("used %d bytes, budget %d", c.used, tt.budget)
			}
			var sum int64
			for _, e := range c.items {
				sum += e.size
			}
			if sum != c.used {
				t.Errorf("entries hold %d bytes, the count says %d", sum, c.used)
			}
			if tt.budget > 0 && c.len() == 0 {
				t.Error("the cache kept nothing")
			}
		})
	}
}

// TestItemCacheBatchesKeepTheirGeneration looks up and keeps items a batch
// at a time, at the cache's generation and at others.
func TestItemCacheBatchesKeepTheirGeneration(t *testing.T) {
	c := newItemCache(1 << 20)
	c.restart(5)
	a := &h4r.Item{ID: "a", Text: "a quartz sundial", Metadata: h4r.Metadata{Version: 1}}
	b := &h4r.Item{ID: "b", Text: "a brass astrolabe", Metadata: h4r.Metadata{Version: 1}}
	huge := &h4r.Item{ID: "huge", Text: strings.Repeat("x", 1<<17), Metadata: h4r.Metadata{Version: 1}}
	read := map[string]*h4r.Item{"a": a, "b": b, "huge": huge}
	c.putAll(4, []string{"a", "b"}, read) // read in an older snapshot
	if c.len() != 0 {
		t.Fatalf("kept %d items read at another generation", c.len())
	}
	c.putAll(5, []string{"a", "gone", "huge"}, read) // "gone" was not found, "huge" is over a sixteenth
	out := map[string]*h4r.Item{}
	missing, keep, ok := c.lookupAll(5, []string{"a", "b", "huge"}, out)
	if !ok || !slices.Equal(missing, []string{"b", "huge"}) || !slices.Equal(keep, missing) || len(out) != 1 || out["a"] != a {
		t.Errorf("lookupAll at the cache's generation: missing %v, keep %v, ok %v, found %v", missing, keep, ok, out)
	}
	out = map[string]*h4r.Item{}
	if missing, _, ok := c.lookupAll(6, []string{"a", "b"}, out); ok || missing != nil || len(out) != 0 {
		t.Errorf("lookupAll at another generation: missing %v, ok %v, found %v", missing, ok, out)
	}
}

// checkEntryByEntry reads every item through the cache while the write lock
// is held, as a write of this process would, and compares it with the file.
func checkEntryByEntry(t *testing.T, s *Store) {
	t.Helper()
	ids := make([]string, 0, 8)
	for _, it := range cacheItems() {
		ids = append(ids, it.ID)
	}
	s.vectors.writeMu.Lock()
	defer s.vectors.writeMu.Unlock()
	err := s.readTx(t.Context(), func(tx *sql.Tx) error {
		if gen, err := readItemGeneration(t.Context(), tx); err != nil || gen == s.items.generation() {
			return fmt.Errorf("the cache is at the file's generation %d (%v): nothing to check", gen, err)
		}
		got, err := s.readItems(t.Context(), tx, ids)
		if err != nil {
			return err
		}
		want := map[string]*h4r.Item{}
		if err := fetchItems(t.Context(), tx, ids, want); err != nil {
			return err
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("items checked entry by entry differ from the file:\n got %v\nwant %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestItemCacheUnderConcurrentWrites reads through the cache while this
// process and another write, then requires the cache to answer what the
// file holds (run it with -race: entries are shared between readers).
func TestItemCacheUnderConcurrentWrites(t *testing.T) {
	s, path, e := newHashVectorStore(t)
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(t.Context(), path, WithTokenCounter(counter), WithLogger(discardLogger()), WithVectors(e), WithItemCacheBytes(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	if _, err := s.Upsert(t.Context(), cacheItems()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	done := make(chan struct{})
	errs := make(chan error, 8)
	for range 3 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared flaky login"}); err != nil {
					errs <- err
					return
				}
				if _, err := s.SearchVectors(ctx, e.Model(), e.Vector("shared flaky login"), h4r.Filters{}, 100, -1); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		it := cacheItems()[i%8]
		it.Text = fmt.Sprintf("shared rewrite %d of flaky login", i)
		writer := s
		if i%3 == 0 {
			writer = other
		}
		if _, err := writer.Upsert(ctx, []h4r.Item{it}); err != nil {
			t.Fatal(err)
		}
		if err := s.flushAccess(ctx, map[string]sqlkit.AccessPending{it.ID: {Count: 1, Last: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, want := searchAll(t, s, e), searchAll(t, other, e)
	for name := range want {
		if !reflect.DeepEqual(got[name], want[name]) {
			t.Errorf("%s through the cache differs from the file:\n got %s\nwant %s", name, describe(got[name]), describe(want[name]))
		}
	}
}

// TestItemCacheStatsCountReads checks the figures /metrics reports: a
// search's first read of its hits misses, the same search again finds
// them all, a store with the cache off counts nothing, and what the cache
// holds is what it says.
func TestItemCacheStatsCountReads(t *testing.T) {
	for _, tt := range []struct {
		name   string
		budget int64
	}{
		{"on", DefaultItemCacheBytes},
		{"off", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newTestStore(t, WithItemCacheBytes(tt.budget))
			ctx := t.Context()
			if _, err := s.Upsert(ctx, cacheItems()); err != nil {
				t.Fatal(err)
			}
			search := func() int {
				hits, err := s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared flaky login"})
				if err != nil {
					t.Fatal(err)
				}
				return len(hits)
			}
			n := search()
			first := s.ItemCacheStats()
			search()
			second := s.ItemCacheStats()
			if tt.budget == 0 {
				if first != (itemcache.Stats{}) || second != (itemcache.Stats{}) {
					t.Fatalf("a cache that is off reported %+v, then %+v; want nothing", first, second)
				}
				return
			}
			if n == 0 || first.Hits != 0 || first.Misses != uint64(n) {
				t.Fatalf("after the first search of %d hits: %+v, want %d misses and no hit", n, first, n)
			}
			if second.Hits != uint64(n) || second.Misses != first.Misses {
				t.Fatalf("after the same search again: %+v, want %d hits and no more misses", second, n)
			}
			var bytes int64
			for _, e := range s.items.items {
				bytes += e.size
			}
			for _, f := range s.items.filters {
				bytes += f.size
			}
			if second.Items != len(s.items.items) || second.Items < n || second.Bytes != bytes {
				t.Fatalf("stats %+v; the cache holds %d items of %d bytes", second, len(s.items.items), bytes)
			}
		})
	}
}
