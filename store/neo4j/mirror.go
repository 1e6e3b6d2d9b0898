package neo4j

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/h4r/h4r"
)

// Source is the store a Mirror copies, the source of truth.
type Source interface {
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Each(ctx context.Context, fn func(*h4r.Item) error) error
}

// Writer is where a Mirror writes (*Client).
type Writer interface {
	Upsert(ctx context.Context, items []*h4r.Item) error
	Delete(ctx context.Context, ids []string) error
	Clear(ctx context.Context) error
}

// Mirror keeps the Neo4j graph in step with the store. It never writes
// what it was told an item is: it reads the item's current state from the
// store and writes that (or a deletion when the store no longer has it).
// Syncs run one at a time, so the last one to run read the store after
// every write that came before it, and the graph ends as the store is,
// whatever order concurrent writers and retries finish in. A failed sync
// keeps its ids for Retry: the store holds the data, the graph catches up.
type Mirror struct {
	w        Writer
	src      Source
	log      *slog.Logger
	timeout  time.Duration
	backoff  [2]time.Duration
	turn     chan struct{} // holds a token while a sync runs: one at a time, see above
	mu       sync.Mutex    // guards pending, lastErr
	pending  map[string]bool
	lastErr  error
	wake     chan struct{}
	maxBatch int
}

// NewMirror returns a mirror writing to w what src holds. It reads
// WithWriteTimeout, WithRetryBackoff, WithBatchSize and WithLogger.
func NewMirror(w Writer, src Source, opts ...Option) *Mirror {
	o := newOptions(opts)
	return &Mirror{w: w, src: src, log: o.log, timeout: o.writeTimeout,
		backoff: [2]time.Duration{o.minBackoff, max(o.maxBackoff, o.minBackoff)},
		pending: map[string]bool{}, wake: make(chan struct{}, 1), maxBatch: max(o.batch, 1),
		turn: make(chan struct{}, 1)}
}

// Changed mirrors the items ids after the store wrote or deleted them. It
// does not fail: a sync that fails is logged, and its ids wait for Retry.
// It runs under its own write timeout and is not cut short when ctx is
// cancelled, since the store's write has happened.
func (m *Mirror) Changed(ctx context.Context, ids ...string) {
	if len(ids) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.timeout)
	defer cancel()
	if err := m.sync(wctx, ids); err != nil {
		m.fail(ctx, ids, err)
	}
}

// Sync mirrors ids now and returns the error; failed ids wait for Retry.
func (m *Mirror) Sync(ctx context.Context, ids ...string) error {
	if err := m.sync(ctx, ids); err != nil {
		m.fail(ctx, ids, err)
		return err
	}
	return nil
}

func (m *Mirror) fail(ctx context.Context, ids []string, err error) {
	m.mu.Lock()
	for _, id := range ids {
		m.pending[id] = true
	}
	m.lastErr = err
	n := len(m.pending)
	m.mu.Unlock()
	m.log.WarnContext(ctx, "mirroring to neo4j failed; the store has the data and the mirror will retry",
		"items", len(ids), "pending", n, "error", err)
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// sync reads ids from the store and writes what it finds.
func (m *Mirror) sync(ctx context.Context, ids []string) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.unlock()
	items, gone, err := h4r.ReadPresent(ctx, m.src.Get, ids)
	if err != nil {
		return err
	}
	if err := m.w.Upsert(ctx, items); err != nil {
		return err
	}
	return m.w.Delete(ctx, gone)
}

// lock waits for the turn to sync, or for ctx to end: a write waiting
// behind a long rebuild gives up after its timeout and is retried later.
func (m *Mirror) lock(ctx context.Context) error {
	select {
	case m.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for another neo4j mirror write: %w", context.Cause(ctx))
	}
}

func (m *Mirror) unlock() { <-m.turn }

// Pending returns the ids waiting for a retry, sorted.
func (m *Mirror) Pending() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := make([]string, 0, len(m.pending))
	for id := range m.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// LastError returns the error of the last failed sync, nil when nothing
// waits for a retry.
func (m *Mirror) LastError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return nil
	}
	return m.lastErr
}

// Retry syncs the pending ids once, a batch at a time. Ids that sync are
// no longer pending; the others stay.
func (m *Mirror) Retry(ctx context.Context) error {
	ids := m.Pending()
	for start := 0; start < len(ids); start += m.maxBatch {
		batch := ids[start:min(start+m.maxBatch, len(ids))]
		if err := m.sync(ctx, batch); err != nil {
			m.mu.Lock()
			m.lastErr = err
			m.mu.Unlock()
			return fmt.Errorf("retrying %d pending mirror writes: %w", len(ids)-start, err)
		}
		m.mu.Lock()
		for _, id := range batch {
			delete(m.pending, id)
		}
		m.mu.Unlock()
	}
	if len(ids) > 0 {
		m.log.InfoContext(ctx, "pending neo4j mirror writes done", "items", len(ids))
	}
	return nil
}

// Run retries pending writes until ctx ends: after a sync fails, and
// then with a doubling wait while retries fail.
func (m *Mirror) Run(ctx context.Context) {
	wait := m.backoff[0]
	for {
		if len(m.Pending()) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-m.wake:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		rctx, cancel := context.WithTimeout(ctx, m.timeout)
		err := m.Retry(rctx)
		cancel()
		if err == nil {
			wait = m.backoff[0]
			continue
		}
		wait = min(wait*2, m.backoff[1])
		m.log.WarnContext(ctx, "neo4j mirror retry failed", "pending", len(m.Pending()), "next_in", wait, "error", err)
	}
}

// Rebuild replaces the graph with what the store holds and returns how
// many items it mirrored. Pending retries are dropped: the rebuild covers
// them; writes that fail while it runs stay pending.
func (m *Mirror) Rebuild(ctx context.Context) (int, error) {
	if err := m.lock(ctx); err != nil {
		return 0, err
	}
	defer m.unlock()
	covered := m.Pending()
	if err := m.w.Clear(ctx); err != nil {
		return 0, err
	}
	var batch []*h4r.Item
	n := 0
	flush := func() error {
		if err := m.w.Upsert(ctx, batch); err != nil {
			return err
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	err := m.src.Each(ctx, func(it *h4r.Item) error {
		cp := *it // a store may reuse what it passes to fn
		batch = append(batch, &cp)
		if len(batch) < m.maxBatch {
			return nil
		}
		return flush()
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return n, fmt.Errorf("rebuilding the neo4j graph after %d items: %w", n, err)
	}
	m.mu.Lock()
	for _, id := range covered {
		delete(m.pending, id)
	}
	m.mu.Unlock()
	return n, nil
}
