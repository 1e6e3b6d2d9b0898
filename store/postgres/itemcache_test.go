package postgres

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
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

// cacheReplica opens a store over dsn with the hashing embedder, its
// vectors loaded; the test catches its vector index up itself (caughtUp),
// so that every store searches the same candidates.
func cacheReplica(t *testing.T, dsn string, h *embed.Hash, opts ...Option) *Store {
	t.Helper()
	s := openAt(t, dsn, opts...)
	s.EnableVectors(h)
	if err := s.loadVectors(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// caughtUp applies every replica's vector writes to each store's index.
func caughtUp(t *testing.T, stores ...*Store) {
	t.Helper()
	for _, s := range stores {
		if err := s.catchUpVectors(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// searchAll runs the generators that read through the item cache: full
// text plain and filtered (post-filter and the filtered postings), vector
// search, and hops.
func searchAll(t *testing.T, s *Store, h *embed.Hash) map[string][]h4r.Hit {
	t.Helper()
	ctx := t.Context()
	out := map[string][]h4r.Hit{}
	var err error
	if out["fulltext"], err = s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared flaky login"}); err != nil {
		t.Fatal(err)
	}
	if out["filtered"], err = s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared", Filters: h4r.Filters{Metadata: map[string]any{"team": "qa"}}}); err != nil {
		t.Fatal(err)
	}
	if out["vector"], err = s.SearchVectors(ctx, h.Model(), h.Vector("shared flaky login"), h4r.Filters{}, 100, -1); err != nil {
		t.Fatal(err)
	}
	if out["graph"], err = s.Graph().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"c0", "c3"}, MaxHops: 3}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestItemCacheServesWhatTheTablesHold proves the cached read path equal
// to the uncached one after every kind of write, by this store, by another
// replica with a cache of its own, and by SQL outside any store: two
// stores with the cache and a third without it share one schema, each
// step first fills both caches with the state before its write, and then
// every generator of each cached store must answer what the uncached one
// answers. A third cached store keeps selectively: fillers read through
// it, more than its budget, make it evict before the first step. "delete and re-create with credentials" is the leak a stale cache would cause (a
// secret delivered, or the harmless item it replaced, from a stale copy).
func TestItemCacheServesWhatTheTablesHold(t *testing.T) {
	h, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	dsn := newSchema(t)
	s := cacheReplica(t, dsn, h)
	replica := cacheReplica(t, dsn, h)
	uncached := cacheReplica(t, dsn, h, WithItemCacheBytes(0))
	tight := cacheReplica(t, dsn, h, WithItemCacheBytes(64<<10))
	if _, err := s.Upsert(t.Context(), cacheItems()); err != nil {
		t.Fatal(err)
	}
	fillers := make([]h4r.Item, 300) // about 250 KB of entries by Footprint
	for i := range fillers {
		fillers[i] = h4r.Item{ID: fmt.Sprintf("f%03d", i), Kind: "note", Text: fmt.Sprintf("zqfiller note number %d", i)}
	}
	if _, err := s.Upsert(t.Context(), fillers); err != nil {
		t.Fatal(err)
	}
	caughtUp(t, tight)
	if hits, err := tight.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "zqfiller", Limit: 300}); err != nil || len(hits) != 300 {
		t.Fatalf("reading the fillers: %d hits, %v", len(hits), err)
	}
	if st := tight.ItemCacheStats(); !st.Selective {
		t.Fatalf("a 64 KiB cache that read 300 fillers is not selective: %+v", st)
	}
	exec := func(q string, args ...any) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := s.writes.Exec(ctx, q, args...); return err }
	}
	upsert := func(st *Store, it h4r.Item) func(ctx context.Context) error {
		return func(ctx context.Context) error { _, err := st.Upsert(ctx, []h4r.Item{it}); return err }
	}
	recreate := func(st *Store, it h4r.Item) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if err := st.Delete(ctx, it.ID); err != nil {
				return err
			}
			_, err := st.Upsert(ctx, []h4r.Item{it})
			return err
		}
	}
	accessed := func(st *Store, id string, n int64, last time.Time) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			return st.flushAccess(ctx, map[string]sqlkit.AccessPending{id: {Count: n, Last: last}})
		}
	}
	changed := cacheItems()[1]
	changed.Content = map[string]any{"n": "changed"}
	changed.Text = "shared login flaky words rewritten so that its vector moves"
	secret := cacheItems()[2]
	secret.Content = map[string]any{"password": "hunter2"}
	secret.Metadata.HasCredentials = true
	harmlessAgain := cacheItems()[2] // the secret replaced by the harmless item again
	sensitive := cacheItems()[3]
	high := 0.95
	sensitive.Metadata.Sensitivity = &high
	sensitive.Metadata.ContainsPII = true
	sensitive.Metadata.PIIFields = []string{"$.content.nested.email"}
	relinked := cacheItems()[4]
	relinked.Links = []h4r.Link{{Target: "c7", Type: "fixes"}}
	retagged := cacheItems()[5]
	retagged.Metadata.Extra = map[string]any{"team": "data"}
	reowned := cacheItems()[6]
	reowned.Metadata.Extra = map[string]any{"team": "qa", "owner": "someone else"}

	steps := []struct {
		name  string
		write func(ctx context.Context) error
	}{
		{"nothing written", func(context.Context) error { return nil }},
		{"text and content changed by this store", upsert(s, changed)},
		{"access counted by this store", accessed(s, "c5", 2, time.Date(2026, 2, 3, 4, 5, 6, 789000, time.UTC))},
		{"access counted by the replica, earlier", accessed(replica, "c5", 1, time.Date(2025, 2, 3, 4, 5, 6, 0, time.UTC))},
		{"metadata changed by the replica", upsert(replica, retagged)},
		{"policy fields changed by the replica", upsert(replica, sensitive)},
		{"access counted outside the stores", exec(`UPDATE items SET access_count = access_count + 3, last_accessed_at = $1 WHERE id = 'c3'`, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))},
		{"tokens recounted outside the stores", exec(`UPDATE items SET tokens = tokens + 1 WHERE id = 'c6'`)},
		{"delete and re-create with credentials by the replica", recreate(replica, secret)},
		{"delete and re-create harmless by the replica", recreate(replica, harmlessAgain)},
		{"delete and re-create with credentials by this store", recreate(s, secret)},
		{"links changed by the replica", upsert(replica, relinked)},
		{"link added by the replica", func(ctx context.Context) error {
			_, err := replica.AddLink(ctx, "c6", h4r.Link{Target: "c0", Type: "references"})
			return err
		}},
		{"metadata changed by the replica, again", upsert(replica, reowned)},
		{"deleted by the replica", func(ctx context.Context) error { return replica.Delete(ctx, "c7") }},
		{"deleted by this store", func(ctx context.Context) error { return s.Delete(ctx, "c0") }},
		{"deleted and re-created in one replace by the replica", func(ctx context.Context) error {
			if err := replica.Delete(ctx, "c1"); err != nil {
				return err
			}
			again := secret
			again.ID = "c1"
			_, err := replica.Replace(ctx, []h4r.Item{again}, []string{"c6"})
			return err
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			caughtUp(t, s, replica, uncached, tight)
			searchAll(t, s, h) // fill the caches with the state before the write
			searchAll(t, replica, h)
			searchAll(t, tight, h)
			searchAll(t, tight, h) // a selective cache keeps an item at its second miss
			if err := st.write(t.Context()); err != nil {
				t.Fatal(err)
			}
			caughtUp(t, s, replica, uncached, tight)
			want := searchAll(t, uncached, h)
			for store, cached := range map[string]*Store{"this store": s, "the replica": replica, "the selective replica": tight} {
				got := searchAll(t, cached, h)
				for name := range want {
					if len(want[name]) == 0 {
						t.Errorf("%s: no hits: the comparison proves nothing", name)
					}
					if !reflect.DeepEqual(got[name], want[name]) {
						t.Errorf("%s of %s through the cache differs from the tables:\n got %s\nwant %s", name, store, describe(got[name]), describe(want[name]))
					}
				}
			}
		})
	}

	// The cache was used: an unchanged item is the same value twice.
	first, second := searchAll(t, s, h)["fulltext"], searchAll(t, s, h)["fulltext"]
	if s.items.Len() == 0 || len(first) == 0 || first[0].Item != second[0].Item {
		t.Errorf("the cache holds %d items and did not answer a repeated search", s.items.Len())
	}
	if st := tight.ItemCacheStats(); !st.Selective || st.Items == 0 || st.Hits == 0 {
		t.Errorf("the selective replica's cache %+v: it kept or answered nothing, so the comparison proves nothing of it", st)
	}
}

func describe(hits []h4r.Hit) string {
	out := ""
	for _, h := range hits {
		m := h.Item.Metadata
		out += fmt.Sprintf("\n  %s v%d score %.4f dist %d access %d last %v tokens %d credentials %v pii %v content %v links %v extra %v",
			h.Item.ID, m.Version, h.Score, h.Distance, m.AccessCount, m.LastAccessedAt, m.Tokens, m.HasCredentials, m.ContainsPII,
			h.Item.Content, h.Item.Links, m.Extra)
	}
	return out
}

// TestItemCacheUnderConcurrentWrites searches through two stores' caches
// while both write the same items (run it with -race: entries are shared
// between readers), checks that no search ever returns an item older than
// one whose write had committed before the search began, and then requires
// every cached search to answer what the tables hold.
func TestItemCacheUnderConcurrentWrites(t *testing.T) {
	h, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	dsn := newSchema(t)
	s := cacheReplica(t, dsn, h)
	replica := cacheReplica(t, dsn, h)
	uncached := cacheReplica(t, dsn, h, WithItemCacheBytes(0))
	if _, err := s.Upsert(t.Context(), cacheItems()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	// committed[id] is the version of id's last committed write.
	var mu sync.Mutex
	committed := map[string]int{}
	done := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for _, reader := range []*Store{s, s, replica} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				floor := maps.Clone(committed)
				mu.Unlock()
				hits, err := reader.FullText().Generate(ctx, h4r.CandidateQuery{Text: "shared flaky login"})
				if err != nil {
					errs <- err
					return
				}
				for _, hit := range hits {
					if v := hit.Item.Metadata.Version; v < floor[hit.Item.ID] {
						errs <- fmt.Errorf("a search returned %s at version %d after version %d had committed", hit.Item.ID, v, floor[hit.Item.ID])
						return
					}
				}
			}
		}()
	}
	for i := range 24 {
		it := cacheItems()[i%8]
		it.Text = fmt.Sprintf("shared rewrite %d of flaky login", i)
		it.Metadata.HasCredentials = i%2 == 0
		writer := s
		if i%3 == 0 {
			writer = replica
		}
		if _, err := writer.Upsert(ctx, []h4r.Item{it}); err != nil {
			t.Fatal(err)
		}
		got, err := uncached.Get(ctx, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		committed[it.ID] = got.Metadata.Version
		mu.Unlock()
		if err := writer.flushAccess(ctx, map[string]sqlkit.AccessPending{it.ID: {Count: 1, Last: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	caughtUp(t, s, replica, uncached)
	want := searchAll(t, uncached, h)
	for store, cached := range map[string]*Store{"this store": s, "the replica": replica} {
		got := searchAll(t, cached, h)
		for name := range want {
			if !reflect.DeepEqual(got[name], want[name]) {
				t.Errorf("%s of %s through the cache differs from the tables:\n got %s\nwant %s", name, store, describe(got[name]), describe(want[name]))
			}
		}
	}
}

// TestFullTextBreaksTiesAtTheCutByID proves the cut the scoring query makes
// at the limit (ties at the cut broken by id in SQL) equal to the cut Go
// made before of every tie: items with the same text score the same, and
// their ids sort differently by bytes than by a linguistic collation
// (upper case, punctuation), so the first limit by (score, id) must be
// the first limit of the whole ordered list, with and without the cache.
func TestFullTextBreaksTiesAtTheCutByID(t *testing.T) {
	dsn := newSchema(t)
	cached := openAt(t, dsn)
	uncached := openAt(t, dsn, WithItemCacheBytes(0))
	var items []h4r.Item
	for i := range 60 {
		for _, prefix := range []string{"a", "B", "_c", "b", "A-"} {
			items = append(items, h4r.Item{ID: fmt.Sprintf("%s%02d", prefix, 59-i), Kind: "note", Text: "tied flaky login note"})
		}
	}
	items = append(items, h4r.Item{ID: "zz-best", Kind: "note", Text: "tied flaky login login login"})
	if _, err := cached.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{cached, uncached} {
		all, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "flaky login", Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(items) {
			t.Fatalf("%d hits of %d items", len(all), len(items))
		}
		for _, limit := range []int{1, 7, 100, 299} {
			got, err := s.FullText().Generate(t.Context(), h4r.CandidateQuery{Text: "flaky login", Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if g, w := hitIDs(got), hitIDs(all[:limit]); !reflect.DeepEqual(g, w) {
				t.Errorf("cache %v, limit %d: got %v, want %v", s.items.Enabled(), limit, g, w)
			}
		}
	}
}
