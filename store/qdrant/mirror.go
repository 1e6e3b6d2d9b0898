package qdrant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/h4r/h4r"
)

// Mirror defaults.
const (
	DefaultRetryInterval = 5 * time.Second
	DefaultMaxPending    = 100_000
	mirrorBatch          = 128
	retryTimeout         = 30 * time.Second
)

// Mirror keeps the collection in step with the store. Sync brings the
// points of some item ids up to date (upsert what the store holds, delete
// what it does not); ids whose sync failed stay pending and are retried in
// the background until they succeed. The store is read at each attempt,
// so a retry writes the item's latest version, and an item deleted
// meanwhile is deleted from Qdrant too. Pending ids live in memory: after a
// crash with ids pending, h4r reindex restores them (the store lost
// nothing).
type Mirror struct {
	ix         *Index
	embedder   h4r.Embedder
	items      ItemGetter
	log        *slog.Logger
	every      time.Duration
	maxPending int

	mu      sync.Mutex
	pending map[string]struct{}
	dropped int // ids given up on because pending was full

	flushMu sync.Mutex // one flush at a time
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// MirrorOption configures NewMirror.
type MirrorOption func(*Mirror)

// WithRetryInterval sets how often pending ids are retried (default 5 s).
func WithRetryInterval(d time.Duration) MirrorOption { return func(m *Mirror) { m.every = d } }

// WithMaxPending caps the ids kept for retry (default 100,000); beyond it
// ids are dropped with an error log asking for h4r reindex.
func WithMaxPending(n int) MirrorOption { return func(m *Mirror) { m.maxPending = n } }

// WithMirrorLogger sets the logger (default slog.Default()).
func WithMirrorLogger(l *slog.Logger) MirrorOption { return func(m *Mirror) { m.log = l } }

// NewMirror returns a mirror writing to ix the vectors e makes of the items
// in store, and starts its retry loop; Close stops it.
func NewMirror(ix *Index, e h4r.Embedder, store ItemGetter, opts ...MirrorOption) (*Mirror, error) {
	m := &Mirror{ix: ix, embedder: e, items: store, log: slog.Default(), every: DefaultRetryInterval,
		maxPending: DefaultMaxPending, pending: map[string]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, o := range opts {
		o(m)
	}
	switch {
	case ix == nil || e == nil || store == nil:
		return nil, errors.New("the Qdrant mirror needs an index, an embedder and a store")
	case m.every <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "retryInterval", "retry interval must be positive, got %v", m.every)
	case m.maxPending <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "maxPending", "max pending must be positive, got %d", m.maxPending)
	}
	go m.loop()
	return m, nil
}

func (m *Mirror) loop() {
	defer close(m.done)
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), retryTimeout)
			if err := m.Flush(ctx); err != nil {
				m.log.WarnContext(ctx, "Qdrant mirror retry failed; will retry", "pending", m.Pending(), "error", err)
			}
			cancel()
		}
	}
}

// Sync brings the points of ids up to date with the store now. On failure
// the ids stay pending for the retry loop, and the error says why; the
// items themselves are safe in the store either way.
func (m *Mirror) Sync(ctx context.Context, ids []string) error {
	err := m.sync(ctx, ids)
	if err != nil {
		m.add(ids)
	}
	return err
}

// Flush retries the pending ids now.
func (m *Mirror) Flush(ctx context.Context) error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	m.mu.Lock()
	ids := make([]string, 0, len(m.pending))
	for id := range m.pending {
		ids = append(ids, id)
	}
	clear(m.pending)
	m.mu.Unlock()
	slices.Sort(ids)
	for start := 0; start < len(ids); start += mirrorBatch {
		batch := ids[start:min(start+mirrorBatch, len(ids))]
		if err := m.sync(ctx, batch); err != nil {
			m.add(ids[start:]) // keep the rest for the next attempt
			return err
		}
	}
	return nil
}

// Pending returns how many ids wait for a retry.
func (m *Mirror) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

func (m *Mirror) add(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if len(m.pending) >= m.maxPending {
			m.dropped++
			continue
		}
		m.pending[id] = struct{}{}
	}
	if m.dropped > 0 {
		m.log.Error("Qdrant mirror: too many items pending; some were dropped from the retry queue: run h4r reindex once Qdrant is back",
			"dropped", m.dropped, "maxPending", m.maxPending)
		m.dropped = 0
	}
}

// sync reads ids from the store, upserts those present and deletes the
// points of those absent.
func (m *Mirror) sync(ctx context.Context, ids []string) error {
	present, absent, err := h4r.ReadPresent(ctx, m.items.Get, ids)
	if err != nil {
		return err
	}
	if err := m.upsert(ctx, present); err != nil {
		return err
	}
	return m.ix.Delete(ctx, absent)
}

func (m *Mirror) upsert(ctx context.Context, items []*h4r.Item) error {
	e := h4r.PinEmbedder(m.embedder) // the points name the model that computed them
	if r, ok := e.(interface{ Ready() bool }); ok && !r.Ready() {
		return nil // an embedder learned from the corpus, not learned yet: h4r reindex learns and rebuilds
	}
	for start := 0; start < len(items); start += mirrorBatch {
		batch := items[start:min(start+mirrorBatch, len(items))]
		texts := make([]string, len(batch))
		for i, it := range batch {
			texts[i] = it.Text
		}
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embedding %d items for Qdrant: %w", len(batch), err)
		}
		if err := m.ix.Upsert(ctx, e.Model(), batch, vecs); err != nil {
			return err
		}
	}
	return nil
}

// Rebuild writes the vector of every item each visits (the store's Each)
// to Qdrant, in batches, calling progress after each with the count done.
func (m *Mirror) Rebuild(ctx context.Context, each func(context.Context, func(*h4r.Item) error) error, progress func(done int)) (int, error) {
	var batch []*h4r.Item
	done := 0
	flush := func() error {
		if err := m.upsert(ctx, batch); err != nil {
			return err
		}
		done += len(batch)
		batch = batch[:0]
		if progress != nil {
			progress(done)
		}
		return nil
	}
	err := each(ctx, func(it *h4r.Item) error {
		batch = append(batch, it)
		if len(batch) == mirrorBatch {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err == nil {
		err = m.ix.DeleteOtherModels(ctx, m.embedder.Model())
	}
	if err != nil {
		return done, fmt.Errorf("rebuilding Qdrant collection %q: %w", m.ix.collection, err)
	}
	return done, nil
}

// Close stops the retry loop and makes a last attempt at what is pending.
func (m *Mirror) Close(ctx context.Context) error {
	m.once.Do(func() { close(m.stop) })
	<-m.done
	if m.Pending() == 0 {
		return nil
	}
	if err := m.Flush(ctx); err != nil {
		return fmt.Errorf("the Qdrant mirror has %d items still pending at shutdown (run h4r reindex): %w", m.Pending(), err)
	}
	return nil
}
