package sqlite

import (
	"database/sql"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/index/vecindex"
)

// A search whose read began before one of this process's writes committed
// finds the in-memory vectors ahead of its snapshot. It must use them, not
// take the index back to its older snapshot: that reload cost every vector
// again and then again for the next search (under steady ingest, hybrid
// packs queued behind reloads), and the write's item must stay findable.
func TestVectorIndexAheadOfSnapshotIsNotReloaded(t *testing.T) {
	s, _, e := newHashVectorStore(t)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, cacheItems()); err != nil {
		t.Fatal(err)
	}
	if err := s.WarmVectors(ctx, e.Model()); err != nil {
		t.Fatal(err)
	}
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	before, err := readGeneration(ctx, tx) // the read's snapshot starts here
	if err != nil {
		t.Fatal(err)
	}
	late := h4r.Item{ID: "late", Kind: "note", Text: "a quartz sundial written while a search was reading"}
	if _, err := s.Upsert(ctx, []h4r.Item{late}); err != nil {
		t.Fatal(err)
	}
	s.vectors.mu.RLock()
	ahead := s.vectors.gen
	s.vectors.mu.RUnlock()
	if ahead <= before {
		t.Fatalf("the write left the in-memory generation at %d, snapshot %d", ahead, before)
	}

	gen, err := s.ensureLoaded(ctx, tx, e.Model())
	if err != nil {
		t.Fatal(err)
	}
	s.vectors.mu.RLock()
	after, n := s.vectors.gen, s.vectors.ix.Len()
	s.vectors.mu.RUnlock()
	if gen != before || after != ahead || n != len(cacheItems())+1 {
		t.Fatalf("snapshot generation %d (want %d); in memory: generation %d, %d vectors (want %d and %d: not taken back to the snapshot)",
			gen, before, after, n, ahead, len(cacheItems())+1)
	}
	hits, err := s.SearchVectors(ctx, e.Model(), e.Vector("quartz sundial"), h4r.Filters{}, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Item.ID != "late" {
		t.Fatalf("a fresh search's best hit is %v, want the late item", hits)
	}
}

// A search that reads a generation this process's write has committed but
// not yet applied to memory waits for the write (which holds writeMu from
// its commit to its update) instead of reloading every vector: under 20%
// ingest that reload, under the exclusive lock, stalled every hybrid pack
// (h4r-loadtest: 59% of packs ok). The marker vector lives only in
// memory, so a reload would drop it.
func TestVectorSearchWaitsForACommittedWrite(t *testing.T) {
	s, path, e := newHashVectorStore(t)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, cacheItems()); err != nil {
		t.Fatal(err)
	}
	if err := s.WarmVectors(ctx, e.Model()); err != nil {
		t.Fatal(err)
	}
	v := &s.vectors
	v.mu.Lock()
	v.ix.Put("marker", e.Vector("memory only marker"))
	before := v.gen
	v.mu.Unlock()

	// A write of this process between its commit and its update.
	if err := v.writeMu.lock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).ExecContext(ctx, `UPDATE vector_generation SET generation = generation + 1 WHERE id = 1`); err != nil {
		v.writeMu.Unlock()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.SearchVectors(ctx, e.Model(), e.Vector("memory only marker"), h4r.Filters{}, 3, 0)
		done <- err
	}()
	select {
	case err := <-done:
		v.writeMu.Unlock()
		t.Fatalf("the search ended (err %v) while the write had not reached memory: it did not wait for it", err)
	case <-time.After(200 * time.Millisecond):
	}
	v.applied(before, before+1, func(*vectorIndex) {})
	v.writeMu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	v.mu.RLock()
	n := v.ix.Len()
	v.mu.RUnlock()
	if n != len(cacheItems())+1 {
		t.Fatalf("%d vectors in memory after the search, want %d: it reloaded them from the file", n, len(cacheItems())+1)
	}
}

// storedCacheItems writes cacheItems, with the hashing embedder's vectors,
// to a new store, and returns the embedder, the items and a function that
// opens the store's file again as a new process would, without loading
// its vectors (closed when the test ends).
func storedCacheItems(t *testing.T) (*embed.Hash, []h4r.Item, func(*testing.T) *Store) {
	t.Helper()
	s, path, e := newHashVectorStore(t)
	items := cacheItems()
	if _, err := s.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	reopen := func(t *testing.T) *Store {
		t.Helper()
		loaded, err := Open(t.Context(), path, WithVectors(e), WithTokenCounter(counter), WithLogger(discardLogger()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { loaded.Close() })
		return loaded
	}
	return e, items, reopen
}

// Loading vectors that do not all fit the bound keeps none of them, and
// leaves the cache off for the searches until the next load.
func TestVectorLoadPastTheBoundKeepsNone(t *testing.T) {
	e, items, reopen := storedCacheItems(t)
	for _, tc := range []struct {
		name    string
		limit   int // bytes
		wantOff bool
	}{
		{"every_vector_fits", 4 * e.Dim() * len(items), false},
		{"one_component_short", 4*e.Dim()*len(items) - 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loaded := reopen(t)
			v := &loaded.vectors
			v.exactLimit = tc.limit
			if err := loaded.WarmVectors(t.Context(), e.Model()); err != nil {
				t.Fatal(err)
			}
			v.exactMu.Lock()
			defer v.exactMu.Unlock()
			wantKept := len(items)
			if tc.wantOff {
				wantKept = 0
			}
			if v.exactOff != tc.wantOff || len(v.exact) != wantKept {
				t.Fatalf("after the load: off %v, %d vectors kept; want off %v, %d kept", v.exactOff, len(v.exact), tc.wantOff, wantKept)
			}
		})
	}
}

// Loading the vectors keeps their float32 values for rescoring, the same
// values a search would read from the file, counted in exactBytes.
func TestVectorLoadKeepsTheExactVectors(t *testing.T) {
	e, items, reopen := storedCacheItems(t)
	ctx := t.Context()
	loaded := reopen(t)
	if err := loaded.WarmVectors(ctx, e.Model()); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	var want map[string][]float32
	if err := loaded.readTx(ctx, func(tx *sql.Tx) (err error) {
		want, err = exactVectors(ctx, tx, e.Model(), ids)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	v := &loaded.vectors
	v.exactMu.Lock()
	defer v.exactMu.Unlock()
	if len(want) != len(items) || !reflect.DeepEqual(v.exact, want) {
		t.Errorf("kept %d vectors at load, the file holds %d: equal %v", len(v.exact), len(want), reflect.DeepEqual(v.exact, want))
	}
	bytes := 0
	for _, vec := range v.exact {
		bytes += 4 * len(vec)
	}
	if bytes != v.exactBytes {
		t.Errorf("kept vectors hold %d bytes, the count says %d", bytes, v.exactBytes)
	}
}

// A load keeps every row's vector when they all fit the bound, and none
// when they do not (overflowed); every row decodes as its own vector
// either way, the rows past the bound into a scratch vector that must not
// overwrite one kept.
func TestExactLoaderKeepsAllOrNone(t *testing.T) {
	const dim = 4
	rows := make([][]float32, 5)
	for i := range rows {
		rows[i] = make([]float32, dim)
		for j := range rows[i] {
			rows[i][j] = float32(10*i + j)
		}
	}
	tests := []struct {
		name     string
		limit    int // bytes
		wantKept int
	}{
		{"every row fits", 4 * dim * len(rows), len(rows)},
		{"all but one fit", 4 * dim * (len(rows) - 1), 0},
		{"a row and a half fit", 4*dim + 2*dim, 0},
		{"none fits", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := exactLoader{limit: tc.limit, exact: map[string][]float32{}}
			for i, want := range rows {
				got, err := l.decode(fmt.Sprint(i), vecindex.EncodeFloat32(want))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("row %d decoded as %v, want %v", i, got, want)
				}
			}
			if len(l.exact) != tc.wantKept || l.bytes != 4*dim*tc.wantKept {
				t.Fatalf("kept %d vectors of %d bytes, want %d of %d", len(l.exact), l.bytes, tc.wantKept, 4*dim*tc.wantKept)
			}
			if l.overflowed != (tc.wantKept < len(rows)) {
				t.Fatalf("overflowed %v with %d of %d rows kept", l.overflowed, tc.wantKept, len(rows))
			}
			for i := range tc.wantKept {
				if got := l.exact[fmt.Sprint(i)]; !reflect.DeepEqual(got, rows[i]) {
					t.Errorf("kept vector of row %d is %v after the load, want its own %v", i, got, rows[i])
				}
			}
		})
	}
}

// After a load whose vectors did not all fit the bound, searches keep none
// of the vectors they read; after one that fitted, they keep them.
func TestKeepExactFollowsTheLoad(t *testing.T) {
	for _, tc := range []struct {
		name     string
		off      bool
		wantKept int
	}{
		{"load_fitted", false, 1},
		{"load_overflowed", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &vectorIndex{loaded: true, gen: 7, exactOff: tc.off}
			v.keepExact(7, map[string][]float32{"a": {1, 2}})
			if len(v.exact) != tc.wantKept || v.exactBytes != 8*tc.wantKept {
				t.Fatalf("kept %d vectors of %d bytes, want %d", len(v.exact), v.exactBytes, tc.wantKept)
			}
		})
	}
}
