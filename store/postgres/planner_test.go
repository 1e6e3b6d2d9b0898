package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// TestBulkLoadIsAnalysed: a fresh bulk load through Upsert leaves the
// tables full-text search reads analysed, so that the first queries are
// not planned for empty tables (on scifact they took 400-750 ms before a
// manual ANALYZE, 17-22 ms after). Before the store analysed them itself,
// the statistics stayed empty until autovacuum came by, a minute or more
// later.
func TestBulkLoadIsAnalysed(t *testing.T) {
	s := newStore(t)
	batch := make([]h4r.Item, 0, 500)
	for i := range 3 * 500 {
		batch = append(batch, h4r.Item{ID: fmt.Sprintf("doc-%04d", i), Text: fmt.Sprintf("document %d about topic %d and word%d", i, i%37, i%101)})
		if len(batch) == cap(batch) {
			if _, err := s.Upsert(t.Context(), batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	var analyzed int64
	if err := s.pool.QueryRow(t.Context(), `SELECT analyzed_docs FROM corpus_stats`).Scan(&analyzed); err != nil {
		t.Fatal(err)
	}
	if analyzed < analyzeMinDocs {
		t.Errorf("analyzed_docs = %d after loading 1500 items, want at least %d", analyzed, analyzeMinDocs)
	}
	for _, table := range []string{"items", "postings", "terms"} {
		var tuples float64
		// reltuples is -1 for a table never analysed or vacuumed.
		if err := s.pool.QueryRow(t.Context(), `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&tuples); err != nil {
			t.Fatal(err)
		}
		if tuples <= 0 {
			t.Errorf("%s: reltuples = %v after a bulk load: the planner has no statistics", table, tuples)
		}
	}
	// The background VACUUM fills the postings' visibility map, so that a
	// term's best postings are read from the index alone. (Whether pages
	// become all-visible depends on the oldest snapshot open anywhere in
	// the database, and other tests may vacuum the whole database, so the
	// test asks that the store vacuumed.)
	deadline := time.Now().Add(time.Minute)
	for s.vacuumed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the store did not vacuum the full-text tables within a minute of a bulk load")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
