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
