package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// snapshotKey keys the read transaction of store s that a context carries
// (Snapshot).
type snapshotKey struct{ s *Store }

// Snapshot begins a read transaction that every read of s under the
// returned context shares, until release ends it: the stages of one pack
// (the text, vector and graph searches, the walk for superseding items)
// then see one state of the file, and begin one transaction and read the
// generation counters once between them, where each began its own. The
// reads share one connection, which database/sql hands to one statement at
// a time. release may be called more than once, and while a read still
// runs (a generator the engine stopped waiting for at its deadline):
// database/sql then cancels the statement under way, and later reads
// under the context fail, as they do once ctx ends the transaction.
func (s *Store) Snapshot(ctx context.Context) (_ context.Context, release func(), err error) {
	if _, ok := ctx.Value(snapshotKey{s}).(*sql.Tx); ok {
		return ctx, func() {}, nil // the outer snapshot's owner ends it
	}
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return ctx, func() {}, fmt.Errorf("beginning a read snapshot: %w", err)
	}
	s.txCounters.Store(tx, &txCounters{})
	var once sync.Once
	return context.WithValue(ctx, snapshotKey{s}, tx), func() {
		once.Do(func() {
			s.txCounters.Delete(tx)
			_ = rollback(tx) // a read has nothing to commit; ended with ctx, it is already rolled back
		})
	}, nil
}
