package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/itemcache"
)

// warmItemsBatch is how many items one read of WarmItems decodes.
const warmItemsBatch = 500

// WarmItems fills the item cache from the file, so that the first packs
// of a process do not read and decode their hits (a server calls it in the
// background at start). It reads the items in id order, a batch per read
// transaction, and keeps each batch only when the cache reflects that
// read's snapshot, as a search's reads are kept (itemCache.fill): the
// writes meanwhile move the cache along or restart it as they always do,
// and a batch read at a generation the cache no longer reflects is not
// kept. It stops when the cache holds what its budget allows short of
// eviction, at the last item, or when ctx ends, and never replaces an
// entry the cache has.
//
// A store whose items, by the first batch's sizes, would not fit the
// budget is not warmed: the cache becomes selective (itemselect.go) and
// keeps what reads come back to, where a warm-up would keep the first
// items by id, which reads find no more often than any others.
func (s *Store) WarmItems(ctx context.Context) error {
	if s.items.budget == 0 {
		return nil
	}
	after, refused := "", 0
	for {
		var (
			n          int
			kept, full bool
			last       string
		)
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			gen, err := s.warmItemsAt(ctx, tx)
			if err != nil {
				return err
			}
			items, err := queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id > ? ORDER BY i.id LIMIT ?`,
				[]any{after, warmItemsBatch}, nil)
			if err != nil {
				return err
			}
			if n = len(items); n > 0 {
				last = items[n-1].ID
			}
			if after == "" && n == warmItemsBatch {
				total, err := countItems(ctx, tx)
				if err != nil {
					return err
				}
				if !s.items.couldHold(total, items) {
					s.items.beSelective()
					full = true
					return nil
				}
			}
			kept, full = s.items.fill(gen, items)
			return nil
		})
		switch {
		case err != nil:
			return fmt.Errorf("filling the item cache: %w", err)
		case full:
			return nil
		case !kept && refused < warmItemsRetries: // a write moved the cache on meanwhile
			refused++
			continue
		case n < warmItemsBatch:
			return nil
		}
		after, refused = last, 0
	}
}

// warmItemsRetries is how many times WarmItems reads a batch again that
// writes kept it from keeping, before it goes on to the next.
const warmItemsRetries = 3

// warmItemsAt reads tx's item generation and, when the cache is behind
// it, restarts the cache there, as itemCacheAt does, but waiting for a
// write of this process under way to update the cache rather than leaving
// it behind: a search cannot wait, a warm-up can.
func (s *Store) warmItemsAt(ctx context.Context, tx *sql.Tx) (int64, error) {
	gen, current, err := s.itemCacheAt(ctx, tx)
	if err != nil || current || s.items.generation() > gen {
		return gen, err
	}
	s.vectors.writeMu.Lock()
	s.items.restart(gen)
	s.vectors.writeMu.Unlock()
	return gen, nil
}

// fill keeps the items of a batch read in a snapshot at generation gen
// that the cache has no entry of, unless the cache reflects another
// generation (kept is false then), and stops short of eviction: at the
// tenth of the budget that evict leaves free. full reports whether the
// cache is that full.
func (c *itemCache) fill(gen int64, items []*h4r.Item) (kept, full bool) {
	if c.budget == 0 {
		return false, true
	}
	sizes := make([]int64, len(items)) // estimated outside the lock
	for i, it := range items {
		sizes[i] = itemcache.Footprint(it)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.room()
	if c.sel.On() { // reads have found the store larger than the budget
		return false, true
	}
	if c.gen != gen {
		return false, c.used >= room
	}
	for i, it := range items {
		if _, ok := c.items[it.ID]; ok || sizes[i] > c.budget/16 {
			continue
		}
		if c.used+sizes[i] > room {
			return true, true
		}
		c.keep(it, sizes[i])
	}
	return true, c.used >= room
}
