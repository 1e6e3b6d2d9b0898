package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// The item write path: every write runs in one transaction that also keeps
// the store's derived state in step (vectors, the link graph), under the
// write lock and within the write deadline. items.go says what is written;
// this file says how a write is ordered, committed and applied in memory.

// upsertTx runs write (the items' rows) in one transaction with the items'
// vectors: written when they could be made, else deleted, since a vector of
// an item's old text would be wrong. The items with the ids in deletes
// (none of them among items) are deleted first in the same transaction,
// and the in-memory indexes take both in one step after the commit. The
// embedding comes first, outside the write deadline; waiting for the
// vector lock and the writer, and the statements, are inside it.
func (s *Store) upsertTx(ctx context.Context, items []encodedItem, deletes []string, write func(context.Context, *sql.Tx) error) (err error) {
	e, vecs := s.embedItems(ctx, items)
	docs := s.prepareTexts(items)
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].item.ID
	}
	ctx, finish := sqlkit.WriteWithin(ctx, s.writeTimeout)
	defer func() { err = finish(err) }()
	v := &s.vectors
	if err := v.writeMu.lock(ctx); err != nil { // orders the link graph's updates too
		return fmt.Errorf("waiting for the writer: %w", err)
	}
	defer v.writeMu.Unlock()
	var before, after, graphBefore, graphAfter, textBefore, textAfter, itemsBefore, itemsAfter int64
	var seqs map[string]uint32
	var deleted []uint32      // the rows of the deleted items, for the text index
	var was map[uint32]string // the texts of the rows replaced or deleted, for the text index
	err = s.runTx(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		deleted = nil // runTx may run this again
		if graphBefore, err = readGraphGeneration(ctx, tx); err != nil {
			return err
		}
		if was, err = oldTexts(ctx, tx, append(ids[:len(ids):len(ids)], deletes...)); err != nil {
			return err
		}
		if itemsBefore, err = readItemGeneration(ctx, tx); err != nil {
			return err
		}
		if textBefore, err = readTextGeneration(ctx, tx); err != nil {
			return err
		}
		// Deleting takes the vectors by cascade, so the vector generation
		// is read before it; without deletes, after write, as always.
		if len(deletes) > 0 {
			if before, err = readGeneration(ctx, tx); err != nil {
				return err
			}
			if deleted, err = deleteRows(ctx, tx, deletes); err != nil {
				return err
			}
		}
		if err := write(ctx, tx); err != nil {
			return err
		}
		if textAfter, err = readTextGeneration(ctx, tx); err != nil {
			return err
		}
		if itemsAfter, err = readItemGeneration(ctx, tx); err != nil {
			return err
		}
		if seqs, err = writtenSeqs(ctx, tx, ids); err != nil {
			return err
		}
		if len(deletes) == 0 {
			if before, err = readGeneration(ctx, tx); err != nil {
				return err
			}
		}
		if vecs == nil {
			if err := deleteVectors(ctx, tx, ids); err != nil {
				return err
			}
		} else if err := putVectors(ctx, tx, e.Model(), ids, vecs); err != nil {
			return err
		}
		if after, err = readGeneration(ctx, tx); err != nil {
			return err
		}
		graphAfter, err = readGraphGeneration(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	s.adj.applied(graphBefore, graphAfter, func(a *adjacency) {
		for _, id := range deletes {
			a.removeItem(id)
		}
		a.putItems(items)
	})
	change := textChange{deletes: deleted, was: s.text.analysed(was)}
	for i := range items {
		p := textPut{seq: seqs[ids[i]], id: ids[i], text: items[i].item.Text}
		if docs != nil {
			p.doc = &docs[i]
		}
		change.puts = append(change.puts, p)
	}
	s.text.applied(textBefore, textAfter, change)
	s.items.applied(itemsBefore, itemsAfter, func(c *itemCache) {
		c.drop(deletes)
		c.drop(ids)
	})
	v.applied(before, after, func(v *vectorIndex) {
		for _, id := range deletes {
			v.remove(id)
		}
		for i, id := range ids {
			if vecs != nil && v.accepts(e.Model(), vecs[i]) {
				v.put(id, vecs[i])
			} else {
				v.remove(id)
			}
		}
	})
	return nil
}

// deleteRows deletes the items with the given ids in tx, keeping their
// last versions, and returns the rows (seqs) of those that were there.
func deleteRows(ctx context.Context, tx *sql.Tx, ids []string) ([]uint32, error) {
	var rows []uint32
	for _, id := range ids {
		var seq int64
		err := tx.QueryRowContext(ctx, `SELECT seq FROM items WHERE id = ?`, id).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the row of item %q: %w", id, err)
		}
		// Keep the last version, so that the id written again goes on from it.
		if _, err := tx.ExecContext(ctx, `INSERT INTO deleted_versions (id, version)
			SELECT id, version FROM items WHERE id = ?1
			ON CONFLICT (id) DO UPDATE SET version = excluded.version`, id); err != nil {
			return nil, fmt.Errorf("keeping the version of item %q: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM items WHERE id = ?`, id); err != nil {
			return nil, fmt.Errorf("deleting item %q: %w", id, err)
		}
		doc, err := seqOf(seq)
		if err != nil {
			return nil, err
		}
		rows = append(rows, doc)
	}
	return rows, nil
}

// deleteTx runs del (which deletes item id; its vector goes by cascade) and
// removes the vector from memory, within the write deadline.
func (s *Store) deleteTx(ctx context.Context, id string, del func(context.Context, *sql.Tx) error) (err error) {
	ctx, finish := sqlkit.WriteWithin(ctx, s.writeTimeout)
	defer func() { err = finish(err) }()
	v := &s.vectors
	if err := v.writeMu.lock(ctx); err != nil { // orders the link graph's updates too
		return fmt.Errorf("waiting for the writer: %w", err)
	}
	defer v.writeMu.Unlock()
	var before, after, graphBefore, graphAfter, textBefore, textAfter, itemsBefore, itemsAfter int64
	var seq int64 = -1
	var was string // the deleted row's text, for the text index
	err = s.runTx(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		if before, err = readGeneration(ctx, tx); err != nil {
			return err
		}
		if graphBefore, err = readGraphGeneration(ctx, tx); err != nil {
			return err
		}
		if textBefore, err = readTextGeneration(ctx, tx); err != nil {
			return err
		}
		if itemsBefore, err = readItemGeneration(ctx, tx); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT seq, text FROM items WHERE id = ?`, id).Scan(&seq, &was); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("reading the row of item %q: %w", id, err)
		}
		if err := del(ctx, tx); err != nil {
			return err
		}
		if itemsAfter, err = readItemGeneration(ctx, tx); err != nil {
			return err
		}
		if textAfter, err = readTextGeneration(ctx, tx); err != nil {
			return err
		}
		if after, err = readGeneration(ctx, tx); err != nil {
			return err
		}
		graphAfter, err = readGraphGeneration(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}
	v.applied(before, after, func(v *vectorIndex) { v.remove(id) })
	s.adj.applied(graphBefore, graphAfter, func(a *adjacency) { a.removeItem(id) })
	var change textChange
	if doc, err := seqOf(seq); seq >= 0 && err == nil {
		change.deletes = []uint32{doc}
		change.was = s.text.analysed(map[uint32]string{doc: was})
	}
	s.text.applied(textBefore, textAfter, change)
	s.items.applied(itemsBefore, itemsAfter, func(c *itemCache) { c.drop([]string{id}) })
	return nil
}

// writeLock is a mutex whose lock gives up when ctx ends, so that a write
// queued behind others fails at its deadline. Its zero value is unlocked.
type writeLock struct {
	once sync.Once
	ch   chan struct{} // holds a token while locked
}

// lock takes the lock, or returns ctx's error when ctx ends first.
func (l *writeLock) lock(ctx context.Context) error {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	select {
	case l.ch <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// tryLock takes the lock if it is free and reports whether it did.
func (l *writeLock) tryLock() bool {
	l.once.Do(func() { l.ch = make(chan struct{}, 1) })
	select {
	case l.ch <- struct{}{}:
		return true
	default:
		return false
	}
}

// Lock takes the lock, waiting as long as it takes (the graph's loads).
func (l *writeLock) Lock() { _ = l.lock(context.Background()) }

// Unlock releases the lock.
func (l *writeLock) Unlock() { <-l.ch }
