package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Copies of items kept outside the store (the context bridge's trajectory
// index) follow the writes of every replica through the log of migration
// 0008: a reader takes the generation first (ItemChangeMark), loads what
// it keeps, then asks for the items changed since (ItemChangesSince) and
// reads them again, as the link graph follows graph_changes.

// itemChangesKept is how long the log of item changes is kept; a reader
// further behind reloads (ItemChangesSince says so).
const itemChangesKept = 10 * time.Minute

// ItemChangeMark returns the generation of the last committed item
// change: everything a read after it returns is at least that current.
func (s *Store) ItemChangeMark(ctx context.Context) (int64, error) {
	var gen int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT gen FROM item_change_state`).Scan(&gen)
	})
	if err != nil {
		return 0, fmt.Errorf("reading the item change generation: %w", err)
	}
	return gen, nil
}

// ItemChangesSince returns the ids of the items of kinds (every kind when
// empty; an item that changed kind is listed under both) inserted,
// deleted or written at a new version after generation mark, and the
// generation that brings the reader to. reload is true when the log past
// mark was pruned: the reader must read everything again.
func (s *Store) ItemChangesSince(ctx context.Context, mark int64, kinds []string) (ids []string, next int64, reload bool, err error) {
	err = s.graphSnapshot(ctx, func(tx pgx.Tx) error {
		var pruned int64
		if err := tx.QueryRow(ctx, `SELECT gen, pruned FROM item_change_state`).Scan(&next, &pruned); err != nil {
			return fmt.Errorf("reading the item change generation: %w", err)
		}
		reload = pruned > mark
		if reload || next == mark {
			ids = nil
			return nil
		}
		rows, err := tx.Query(ctx, `SELECT DISTINCT item_id FROM item_changes
			WHERE gen > $1 AND (coalesce(cardinality($2::text[]), 0) = 0 OR kind = ANY($2))`, mark, kinds)
		if err != nil {
			return fmt.Errorf("reading the items changed: %w", err)
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("reading the items changed: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, mark, false, fmt.Errorf("reading item changes after generation %d: %w", mark, err)
	}
	return ids, next, reload, nil
}

// ItemVersions returns the version of each of ids that exists; a missing
// id is absent from the map. It is one statement, for a check that what
// was read earlier is still current.
func (s *Store) ItemVersions(ctx context.Context, ids []string) (map[string]int, error) {
	out := make(map[string]int, len(ids))
	err := s.read(ctx, func(ctx context.Context) error {
		clear(out)
		rows, err := s.pool.Query(ctx, `SELECT id, version FROM items WHERE id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		var id string
		var version int32
		_, err = pgx.ForEachRow(rows, []any{&id, &version}, func() error { out[id] = int(version); return nil })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the versions of %d items: %w", len(ids), err)
	}
	return out, nil
}

// pruneItemChanges deletes the log of item changes older than keep, up to
// a generation, and records that generation as pruned: a reader that has
// not applied it reloads rather than miss a change.
func (s *Store) pruneItemChanges(ctx context.Context, keep time.Duration) error {
	err := s.writeTxWithin(ctx, 0, func(ctx context.Context, tx pgx.Tx) error {
		// The state's lock first, as writers take it, so that no change at
		// or below the bound commits meanwhile.
		var upto int64
		err := tx.QueryRow(ctx, `UPDATE item_change_state SET pruned = greatest(pruned,
				coalesce((SELECT max(gen) FROM item_changes WHERE at < now() - make_interval(secs => $1)), 0))
			RETURNING pruned`, keep.Seconds()).Scan(&upto)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM item_changes WHERE gen <= $1`, upto)
		return err
	})
	if err != nil {
		return fmt.Errorf("pruning the log of item changes: %w", err)
	}
	return nil
}

// itemChangesChannel is the channel the log's trigger notifies, with the
// schema as payload.
const itemChangesChannel = "h4r_item_changes"

// listenRetry is how long ListenItemChanges waits before connecting again.
const listenRetry = time.Second

// ListenItemChanges calls signal whenever a transaction that logged item
// changes in this store's schema commits, so that a follower reads the
// log at once rather than at its next poll, until ctx ends (it returns
// nil then). It listens on a connection of its own, outside the pools,
// and connects again after a failure (logged), calling signal on each
// (re)connection since changes may have been missed meanwhile: a follower
// keeps polling as well.
func (s *Store) ListenItemChanges(ctx context.Context, signal func()) error {
	for {
		err := s.listenItemChanges(ctx, signal)
		if ctx.Err() != nil {
			return nil
		}
		s.log.WarnContext(ctx, "listening for item changes failed; followers poll until it connects again", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(listenRetry):
		}
	}
}

func (s *Store) listenItemChanges(ctx context.Context, signal func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connecting to listen for item changes: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
		defer cancel()
		_ = conn.Close(ctx)
	}()
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return fmt.Errorf("reading the schema to listen for: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN `+itemChangesChannel); err != nil {
		return fmt.Errorf("listening for item changes: %w", err)
	}
	signal()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("waiting for item changes: %w", err)
		}
		if n.Payload == schema {
			signal()
		}
	}
}
