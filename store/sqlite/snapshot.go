package sqlite

import (
	"context"
	"database/sql"
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
	if _, ok := s.snapshotOf(ctx); ok {
		return ctx, func() {}, nil // the outer snapshot's owner ends it
	}
	tx, end, err := s.beginRead(ctx)
	if err != nil {
		return ctx, func() {}, err
	}
	// Ended with ctx, the transaction is already rolled back: nothing to report.
	return context.WithValue(ctx, snapshotKey{s}, tx), sync.OnceFunc(func() { _ = end() }), nil
}

// snapshotOf returns the read transaction of s that ctx carries, if any.
func (s *Store) snapshotOf(ctx context.Context) (*sql.Tx, bool) {
	tx, ok := ctx.Value(snapshotKey{s}).(*sql.Tx)
	return tx, ok
}
