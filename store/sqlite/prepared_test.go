package sqlite

import (
	"database/sql"
	"testing"

	"github.com/h4r/h4r"
)

// TestPreparedCountersReadTheFile reads every generation counter through
// its prepared statement and through its query, in one read, after writes
// that move each of them, on every reader connection the pool opens.
func TestPreparedCountersReadTheFile(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	for i, step := range []func() error{
		func() error { return nil },
		func() error {
			_, err := s.Upsert(ctx, []h4r.Item{{ID: "a", Kind: "note", Text: "a quartz sundial"}, {ID: "b", Kind: "note", Text: "a brass astrolabe"}})
			return err
		},
		func() error {
			_, err := s.AddLink(ctx, "a", h4r.Link{Target: "b", Type: h4r.LinkSimilarTo})
			return err
		},
		func() error { return s.Delete(ctx, "b") },
	} {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		// Reads in flight at once take several connections of the pool.
		txs := make([]*sql.Tx, readConnections)
		for j := range txs {
			tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			txs[j] = tx
		}
		for _, tx := range txs {
			for c := range counters {
				got, err := s.readCounter(ctx, tx, c)
				if err != nil {
					t.Fatalf("step %d, %s: %v", i, counterWhat[c], err)
				}
				want, err := readCounterSQL(ctx, tx, c)
				if err != nil {
					t.Fatalf("step %d, %s: %v", i, counterWhat[c], err)
				}
				if got != want {
					t.Errorf("step %d: %s %d prepared, %d parsed", i, counterWhat[c], got, want)
				}
			}
		}
		for _, tx := range txs {
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A read transaction reads every counter with the first it is asked for,
// the values its snapshot holds, and keeps them no longer than it lasts.
func TestReadTxReadsTheCountersOnce(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := t.Context()
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "a", Kind: "note", Text: "a quartz sundial"}, {ID: "b", Kind: "note", Text: "a brass astrolabe"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddLink(ctx, "a", h4r.Link{Target: "b", Type: h4r.LinkSimilarTo}); err != nil {
		t.Fatal(err)
	}
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		if _, err := s.readCounter(ctx, tx, vectorCounter); err != nil {
			return err
		}
		v, ok := s.txCounters.Load(tx)
		if !ok || !v.(*txCounters).read {
			t.Fatal("the first counter read did not read them all")
		}
		tc := v.(*txCounters)
		for c := range counters {
			want, err := readCounterSQL(ctx, tx, c)
			if err != nil {
				return err
			}
			if !tc.valid[c] || tc.gen[c] != want {
				t.Errorf("%s read with the first: %d (valid %v), want %d", counterWhat[c], tc.gen[c], tc.valid[c], want)
			}
			// What readCounter answers is what was read with the first.
			tc.gen[c] = -1 - int64(c)
			if got, err := s.readCounter(ctx, tx, c); err != nil || got != -1-int64(c) {
				t.Errorf("%s = %d, %v; want the one read with the first", counterWhat[c], got, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.txCounters.Range(func(k, _ any) bool {
		t.Errorf("counters of a finished read kept: %v", k)
		return true
	})
}
