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
// a time; release must not be called before they return, and may be
// called more than once. The transaction ends with ctx as any does: reads
// under it after that fail.
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
