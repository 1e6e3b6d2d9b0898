package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pendingAccess is what RecordAccess noted for one item since the last
// flush.
type pendingAccess struct {
	count int64
	last  time.Time
}

// accessTracker batches access counts in memory and writes them in one
// transaction per interval, so that serving a pack never waits on a write.
type accessTracker struct {
	flush func(context.Context, map[string]pendingAccess) error
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	pending map[string]pendingAccess
	stopped bool

	quit chan struct{}
	done chan struct{}
}

func startAccessTracker(flush func(context.Context, map[string]pendingAccess) error, every time.Duration, now func() time.Time, log *slog.Logger) *accessTracker {
	a := &accessTracker{
		flush:   flush,
		now:     now,
		log:     log,
		pending: map[string]pendingAccess{},
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go a.run(every)
	return a
}

func (a *accessTracker) run(every time.Duration) {
	defer close(a.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-a.quit:
			return
		case <-ticker.C:
			if err := a.flushPending(); err != nil {
				// The counts went back to pending; the next tick retries.
				a.log.Warn("writing access counts failed", "err", err)
			}
		}
	}
}

// record notes one access to each id; an id listed twice counts twice.
func (a *accessTracker) record(ids []string) {
	if len(ids) == 0 {
		return
	}
	now := a.now().UTC()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		a.log.Debug("access recorded after the store was closed; ignored", "items", len(ids))
		return
	}
	for _, id := range ids {
		p := a.pending[id]
		p.count++
		p.last = now
		a.pending[id] = p
	}
}

// flushPending writes what is pending. On failure it puts the counts back,
// merged with any recorded meanwhile, so that none are lost.
func (a *accessTracker) flushPending() error {
	a.mu.Lock()
	batch := a.pending
	a.pending = map[string]pendingAccess{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	err := a.flush(ctx, batch)
	if err != nil {
		a.mu.Lock()
		for id, p := range a.pending {
			q := batch[id]
			q.count += p.count
			q.last = p.last
			batch[id] = q
		}
		a.pending = batch
		a.mu.Unlock()
	}
	return err
}

// stop ends the background flushes and writes what is still pending.
// Accesses recorded after stop are ignored.
func (a *accessTracker) stop() error {
	close(a.quit)
	<-a.done
	err := a.flushPending()
	a.mu.Lock()
	a.stopped = true
	dropped := len(a.pending)
	a.mu.Unlock()
	if err != nil {
		return fmt.Errorf("writing access counts of %d items on close: %w", dropped, err)
	}
	return nil
}

// RecordAccess notes that the items with these ids were delivered. It only
// updates a map in memory; the counts reach the database within the flush
// interval, in one statement, and on Close. Unknown ids are ignored when
// the counts are written.
func (s *Store) RecordAccess(ids []string) { s.access.record(ids) }

// flushAccess adds pending counts to the items in one transaction: it
// locks the rows in id order (as Upsert does, so the two cannot deadlock),
// then updates them all in one statement. Several replicas add their own
// counts: the increments commute.
func (s *Store) flushAccess(ctx context.Context, batch map[string]pendingAccess) error {
	ids := make([]string, 0, len(batch))
	for id := range batch {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	counts := make([]int64, len(ids))
	lasts := make([]time.Time, len(ids))
	for i, id := range ids {
		counts[i], lasts[i] = batch[id].count, batch[id].last
	}
	return s.writeTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM items WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
			return fmt.Errorf("locking %d items for their access counts: %w", len(ids), err)
		}
		_, err := tx.Exec(ctx, `UPDATE items i
			SET access_count = i.access_count + u.n,
			    last_accessed_at = greatest(i.last_accessed_at, u.at)
			FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) AS u (id, n, at)
			WHERE i.id = u.id`, ids, counts, lasts)
		if err != nil {
			return fmt.Errorf("adding the access counts of %d items: %w", len(ids), err)
		}
		return nil
	})
}
