package sqlkit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// AccessPending is what was recorded for one item since the last flush: how
// many accesses, and when the last one was.
type AccessPending struct {
	Count int64
	Last  time.Time
}

// AccessTracker batches access counts in memory and writes them in one
// transaction per interval, so that serving a pack never waits on a write.
type AccessTracker struct {
	flush   func(context.Context, map[string]AccessPending) error
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu      sync.Mutex
	pending map[string]AccessPending
	stopped bool

	quit chan struct{}
	done chan struct{}
}

// StartAccessTracker begins flushing every interval. flush writes one batch in one
// transaction; a failed batch is kept and retried with the next, and each
// attempt gets timeout.
func StartAccessTracker(flush func(context.Context, map[string]AccessPending) error, every, timeout time.Duration, now func() time.Time, log *slog.Logger) *AccessTracker {
	a := &AccessTracker{
		flush:   flush,
		timeout: timeout,
		now:     now,
		log:     log,
		pending: map[string]AccessPending{},
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go a.run(every)
	return a
}

func (a *AccessTracker) run(every time.Duration) {
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

// Record notes one access to each id; an id listed twice counts twice.
func (a *AccessTracker) Record(ids []string) {
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
		p.Count++
		p.Last = now
		a.pending[id] = p
	}
}

// flushPending writes what is pending. On failure it puts the counts back,
// merged with any recorded meanwhile, so that none are lost.
func (a *AccessTracker) flushPending() error {
	a.mu.Lock()
	batch := a.pending
	a.pending = map[string]AccessPending{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.timeout)
	defer cancel()
	err := a.flush(ctx, batch)
	if err != nil {
		a.mu.Lock()
		for id, p := range a.pending {
			q := batch[id]
			q.Count += p.Count
			q.Last = p.Last
			batch[id] = q
		}
		a.pending = batch
		a.mu.Unlock()
	}
	return err
}

// Stop ends the background flushes and writes what is still pending.
// Accesses recorded after stop are ignored.
func (a *AccessTracker) Stop() error {
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
