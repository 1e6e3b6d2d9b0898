package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/h4r/h4r"
)

// DefaultItemCacheBytes is the memory the decoded-item cache may take by
// default (WithItemCacheBytes): 256 MiB holds every item of a 10,000-item
// store many times over and about 100,000 items of scifact's size
// (PERFORMANCE.md).
const DefaultItemCacheBytes = 256 << 20

// WithItemCacheBytes bounds the memory of the cache of decoded items that
// the full-text and vector generators read their hits through (default
// DefaultItemCacheBytes; 0 turns it off: every hit is read and decoded
// from the file). The bound is on an estimate of each item's memory
// (itemFootprint), not on the heap as measured.
func WithItemCacheBytes(n int64) Option { return func(o *options) { o.itemCacheBytes = &n } }

// itemCache keeps items as queryItems decoded them, so that a search's hits
// are not read and decoded again on every request: that was most of a
// pack's CPU time (PERFORMANCE.md).
//
// An entry is never trusted on its own. Every read first fetches the hits'
// stamps (itemStamp) in the reader's snapshot, one indexed query for all of
// them, and uses an entry only when its stamp is the row's: the id's
// version is never reused, not even after a delete and a re-create
// (deleted_versions), and every write of an item's content, metadata or
// links raises it; the other stamped columns are those a write changes
// without a new version (access counts, recounted tokens). So a write by
// this process or another, committed or not yet visible to the snapshot,
// can never be answered from a stale entry, and nothing has to be kept in
// step with writes (they only drop the entries they make useless).
//
// Entries are shared by every request that reads them and must never be
// modified: the slicer redacts a copy (scs.Redact), and a changed access
// count makes a new entry rather than changing the old one.
//
// Its zero value is a cache that keeps nothing.
type itemCache struct {
	mu     sync.RWMutex
	budget int64 // bytes; 0: keep nothing
	used   int64
	items  map[string]cachedItem
}

// cachedItem is a decoded item, the stamp of the row it was read from and
// its estimated memory.
type cachedItem struct {
	item  *h4r.Item
	stamp itemStamp
	size  int64
}

// itemStamp is what of a row says whether a decoded copy of it is current.
// version covers every column but the ones after it, which change without
// a new version.
type itemStamp struct {
	version        int
	accessCount    int64
	lastAccessedAt string // as stored; "" for NULL
	byteSize       int
	tokens         int
}

// sameContent reports whether two stamps are of the same content: they may
// differ in access counts only.
func (a itemStamp) sameContent(b itemStamp) bool {
	return a.version == b.version && a.byteSize == b.byteSize && a.tokens == b.tokens
}

func newItemCache(budget int64) itemCache {
	return itemCache{budget: max(budget, 0), items: map[string]cachedItem{}}
}

// itemFootprint estimates the memory of a decoded item: its text, its
// content and metadata decoded (maps and interfaces take about twice the
// JSON they came from; ByteSize is the delivered JSON, text included), its
// links, and the fixed parts.
func itemFootprint(it *h4r.Item) int64 {
	n := 512 + int64(len(it.ID)) + int64(len(it.Text)) + 2*int64(it.Metadata.ByteSize)
	for _, l := range it.Links {
		n += 96 + int64(len(l.Target)+len(l.Type)+len(l.Context))
	}
	return n + 64*int64(len(it.Metadata.Extra)+len(it.Metadata.Tags))
}

// get returns the entry of id when its stamp is stamp; when only the
// access counts differ, it returns a copy of the entry's item with the
// row's counts (and keeps that copy in its place).
func (c *itemCache) get(id string, stamp itemStamp) (*h4r.Item, bool) {
	if c.budget == 0 {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.items[id]
	c.mu.RUnlock()
	switch {
	case !ok || !e.stamp.sameContent(stamp):
		return nil, false
	case e.stamp == stamp:
		return e.item, true
	}
	it := *e.item // shallow: everything but the counts is shared, read-only
	it.Metadata.AccessCount = stamp.accessCount
	it.Metadata.LastAccessedAt = time.Time{}
	if stamp.lastAccessedAt != "" {
		t, err := parseTime(stamp.lastAccessedAt)
		if err != nil {
			return nil, false // the slow path reports it
		}
		it.Metadata.LastAccessedAt = t
	}
	c.put(&it, stamp)
	return &it, true
}

// put keeps it, read in a row of stamp, replacing an entry of another
// stamp; past the budget, it forgets arbitrary entries (Go's map order)
// until a tenth of the budget is free.
func (c *itemCache) put(it *h4r.Item, stamp itemStamp) {
	if c.budget == 0 {
		return
	}
	size := itemFootprint(it)
	if size > c.budget/16 {
		return // one huge item would push out many
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.items[it.ID]; ok {
		if old.stamp.version > stamp.version {
			return // a reader of an older snapshot came late
		}
		c.used -= old.size
	}
	c.items[it.ID] = cachedItem{item: it, stamp: stamp, size: size}
	c.used += size
	if c.used <= c.budget {
		return
	}
	for id, e := range c.items {
		if c.used <= c.budget-c.budget/10 {
			break
		}
		delete(c.items, id)
		c.used -= e.size
	}
}

// forget drops the entries of ids (written or deleted: they cannot be
// current any more), so that memory does not hold deleted items.
func (c *itemCache) forget(ids []string) {
	if c.budget == 0 || len(ids) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.items[id]; ok {
			delete(c.items, id)
			c.used -= e.size
		}
	}
}

// len and bytes report the cache's size (tests, benchmarks).
func (c *itemCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.items)
}

// readItems returns the items with the given ids as tx sees them, by id
// (an id without an item is absent): from the cache when the row's stamp
// says the entry is current, else read and decoded (queryItems) and kept.
func (s *Store) readItems(ctx context.Context, tx *sql.Tx, ids []string) (map[string]*h4r.Item, error) {
	out := make(map[string]*h4r.Item, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	if s.items.budget == 0 {
		items, err := queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`, []any{list}, nil)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			out[it.ID] = it
		}
		return out, nil
	}
	stamps, err := readStamps(ctx, tx, list, len(ids))
	if err != nil {
		return nil, err
	}
	var missing []string
	for id, st := range stamps {
		if it, ok := s.items.get(id, st); ok {
			out[id] = it
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	if list, err = jsonList(missing); err != nil {
		return nil, err
	}
	items, err := queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`, []any{list}, nil)
	if err != nil {
		return nil, err
	}
	for _, it := range items {
		out[it.ID] = it
		if st, ok := stamps[it.ID]; ok {
			s.items.put(it, st)
		}
	}
	return out, nil
}

// readStamps reads the stamps of the items in the JSON list of ids.
func readStamps(ctx context.Context, tx *sql.Tx, list string, n int) (_ map[string]itemStamp, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT i.id, i.version, i.access_count, i.last_accessed_at, i.byte_size, i.tokens
		FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, fmt.Errorf("querying item stamps: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	out := make(map[string]itemStamp, n)
	for rows.Next() {
		var (
			id   string
			st   itemStamp
			last sql.NullString
		)
		if err := rows.Scan(&id, &st.version, &st.accessCount, &last, &st.byteSize, &st.tokens); err != nil {
			return nil, fmt.Errorf("reading an item stamp: %w", err)
		}
		st.lastAccessedAt = last.String
		out[id] = st
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading item stamps: %w", err)
	}
	return out, nil
}
