package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r"
)

// warmItems are n items with content, tags and links, enough for several
// batches of WarmItems.
func warmItems(n int, version string) []h4r.Item {
	items := make([]h4r.Item, n)
	for i := range items {
		id := fmt.Sprintf("w%04d", i)
		items[i] = h4r.Item{
			ID: id, Kind: "note",
			Text:     fmt.Sprintf("warm note %d, %s", i, version),
			Content:  map[string]any{"n": float64(i), "version": version},
			Links:    []h4r.Link{{Target: fmt.Sprintf("w%04d", (i+1)%n), Type: "caused_by"}},
			Metadata: h4r.Metadata{Tags: []string{"t", id}},
		}
	}
	return items
}

// cachedAsTheFileHolds fails unless every entry of s's cache is the item
// the file holds (read by a store without a cache), and reports how many
// entries it compared. A cache behind the file (left there by a write
// another process made, or one of this process made before the cache
// started) fails it unless behind is true, and is then not compared: its
// entries are as of its own generation, and reads restart it.
func cachedAsTheFileHolds(t *testing.T, s, file *Store, behind bool) int {
	t.Helper()
	s.items.mu.RLock()
	entries := make(map[string]*h4r.Item, len(s.items.items))
	for id, e := range s.items.items {
		entries[id] = e.item
	}
	gen := s.items.gen
	s.items.mu.RUnlock()
	var fileGen int64
	if err := file.writer.QueryRowContext(t.Context(), `SELECT generation FROM item_generation`).Scan(&fileGen); err != nil {
		t.Fatal(err)
	}
	if gen != fileGen && behind {
		return 0
	}
	if gen != fileGen {
		t.Fatalf("the cache reflects generation %d, the file is at %d", gen, fileGen)
	}
	for id, it := range entries {
		want, err := file.Get(t.Context(), id)
		if err != nil {
			t.Fatalf("cached %s: %v", id, err)
		}
		if !reflect.DeepEqual(it, want) {
			t.Fatalf("cached %s is not what the file holds:\n got %+v\nwant %+v", id, it, want)
		}
	}
	return len(entries)
}

// TestWarmItemsFillsTheCache: a process that opens a store holding items
// caches them all, each as the file holds it, in several batches.
func TestWarmItemsFillsTheCache(t *testing.T) {
	s, path := newTestStore(t)
	const n = 2*warmItemsBatch + 7
	if _, err := s.Upsert(t.Context(), warmItems(n, "v1")); err != nil {
		t.Fatal(err)
	}
	fresh := openSecond(t, path, WithItemCacheBytes(DefaultItemCacheBytes))
	file := openSecond(t, path, WithItemCacheBytes(0))
	if fresh.items.len() != 0 {
		t.Fatalf("a fresh process caches %d items before warming", fresh.items.len())
	}
	if err := fresh.WarmItems(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := cachedAsTheFileHolds(t, fresh, file, false); got != n {
		t.Errorf("warming cached %d items of %d", got, n)
	}
	// A search is answered from what warming kept: the same value.
	got, err := fresh.readTxItems(t.Context(), []string{"w0003"})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := fresh.items.lookup("w0003"); got["w0003"] != e.item {
		t.Error("a read after warming did not use the warmed entry")
	}
	// Warming again replaces nothing.
	before, _ := fresh.items.lookup("w0010")
	if err := fresh.WarmItems(t.Context()); err != nil {
		t.Fatal(err)
	}
	if after, _ := fresh.items.lookup("w0010"); after.item != before.item {
		t.Error("warming again replaced an entry")
	}
}

// openSecond opens the store at path again, as another process would.
func openSecond(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path, append([]Option{WithTokenCounter(counter), WithLogger(discardLogger())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// readTxItems reads ids through the item cache in one read transaction.
func (s *Store) readTxItems(ctx context.Context, ids []string) (map[string]*h4r.Item, error) {
	var out map[string]*h4r.Item
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = s.readItems(ctx, tx, ids)
		return err
	})
	return out, err
}

// TestWarmItemsStopsShortOfItsBudget: a store whose first batch says it
// will not fit the budget is not warmed, and the cache becomes selective;
// one whose first batch is small but whose later items fill the budget is
// warmed until just before the cache would evict.
func TestWarmItemsStopsShortOfItsBudget(t *testing.T) {
	tests := []struct {
		name          string
		budget        int64
		pad           int // bytes of text added to the items after the first batch
		warmed        bool
		wantSelective bool
	}{
		{"larger than the budget", 96 << 10, 0, false, true},
		{"larger than its first batch says", 1600 << 10, 600, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			budget := tt.budget
			items := warmItems(1500, "v1")
			if tt.pad > 0 {
				for i := warmItemsBatch; i < len(items); i++ {
					items[i].Text += strings.Repeat(" padding", tt.pad/8)
				}
			}
			w, path := newTestStore(t, WithItemCacheBytes(0))
			if _, err := w.Upsert(t.Context(), items); err != nil {
				t.Fatal(err)
			}
			s := openSecond(t, path, WithItemCacheBytes(budget))
			if !tt.warmed { // the test's premise: by the first batch, the store does not fit
				first, err := s.readTxItems(t.Context(), []string{"w0000"})
				if err != nil {
					t.Fatal(err)
				}
				s.items.restart(s.items.generation() + 1) // forget the read
				if s.items.couldHold(1500, []*h4r.Item{first["w0000"]}) {
					t.Fatal("1,500 items of this size fit the budget; make them larger")
				}
			}
			if err := s.WarmItems(t.Context()); err != nil {
				t.Fatal(err)
			}
			n, used := s.items.len(), s.items.used
			if got := s.ItemCacheStats().Selective; got != tt.wantSelective {
				t.Errorf("selective after warming, as the store reports it: %v, want %v", got, tt.wantSelective)
			}
			if !tt.warmed {
				if n != 0 {
					t.Errorf("warming kept %d items of a store larger than its budget", n)
				}
				return
			}
			if n == 0 || n >= 1500 {
				t.Fatalf("warming a %d-byte cache kept %d of 1,500 items", budget, n)
			}
			if used > budget-budget/10 {
				t.Errorf("warming filled %d bytes of %d: past the room evict leaves", used, budget)
			}
			if used < budget-budget/5 {
				t.Errorf("warming stopped at %d bytes of %d", used, budget)
			}
		})
	}
}

// TestItemCacheFillKeepsItsGeneration: a batch read at a generation the
// cache no longer reflects is not kept, and an entry is never replaced.
func TestItemCacheFillKeepsItsGeneration(t *testing.T) {
	c := newItemCache(1 << 20)
	c.restart(5)
	old := &h4r.Item{ID: "a", Text: "as of generation 4", Metadata: h4r.Metadata{Version: 1}}
	if c.fill(4, []*h4r.Item{old}); c.len() != 0 {
		t.Fatal("an item read at an older generation was kept")
	}
	first := &h4r.Item{ID: "a", Text: "as of generation 5", Metadata: h4r.Metadata{Version: 2}}
	c.fill(5, []*h4r.Item{first})
	c.fill(5, []*h4r.Item{{ID: "a", Text: "again", Metadata: h4r.Metadata{Version: 2}}})
	if e, ok := c.lookup("a"); !ok || e.item != first {
		t.Errorf("entry %+v, want the first item kept", e.item)
	}
}

// TestWarmItemsBesideWrites warms a fresh process's cache while it writes
// the items it reads, and, in the second case, another process too: once
// all are done, every entry of a cache at the file's generation is the
// item the file holds, every item read through the cache is, and warming
// again fills in what the writes kept out (-race runs this too).
func TestWarmItemsBesideWrites(t *testing.T) {
	s, path := newTestStore(t)
	const n = 3 * warmItemsBatch
	if _, err := s.Upsert(t.Context(), warmItems(n, "v1")); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, it := range warmItems(n, "") {
		ids[i] = it.ID
	}
	for _, withOther := range []bool{false, true} {
		t.Run(fmt.Sprintf("another process writes: %v", withOther), func(t *testing.T) {
			fresh := openSecond(t, path, WithItemCacheBytes(DefaultItemCacheBytes))
			other := openSecond(t, path, WithItemCacheBytes(0))
			write := func(st *Store, first, step int, version string) func() error {
				return func() error {
					for i := first; i < n; i += step {
						if _, err := st.Upsert(t.Context(), warmItems(n, version)[i:i+1]); err != nil {
							return err
						}
					}
					return nil
				}
			}
			jobs := []func() error{
				func() error { return fresh.WarmItems(t.Context()) },
				write(fresh, 0, 37, fmt.Sprintf("local, other %v", withOther)),
			}
			if withOther {
				jobs = append(jobs, write(other, 5, 41, "other"))
			}
			var wg sync.WaitGroup
			errs := make([]error, len(jobs))
			for i, job := range jobs {
				wg.Go(func() { errs[i] = job() })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			cachedAsTheFileHolds(t, fresh, other, true)
			// Warming again, quietly, fills in what the writes kept out.
			if err := fresh.WarmItems(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := cachedAsTheFileHolds(t, fresh, other, false); got != n {
				t.Errorf("warming cached %d items of %d", got, n)
			}
			got, err := fresh.readTxItems(t.Context(), ids)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				want, err := other.Get(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got[id], want) {
					t.Fatalf("%s read through the cache is not what the file holds:\n got %+v\nwant %+v", id, got[id], want)
				}
			}
		})
	}
}
