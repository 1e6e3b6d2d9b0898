package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/itemcache"
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
// (itemcache.Footprint), not on the heap as measured.
func WithItemCacheBytes(n int64) Option { return func(o *options) { o.itemCacheBytes = &n } }

// itemCache keeps items as queryItems decoded them, so that a search's hits
// are not read and decoded again on every request: that was most of a
// pack's CPU time (PERFORMANCE.md).
//
// The file stays the only truth. item_generation (migration 0009) counts
// every change to an item row or its links, access counts included; the
// cache reflects one generation, gen, and every entry is the item as of
// gen. A read whose snapshot is at gen uses the entries as they are (no
// query) and keeps what it reads. This process's writes move the cache
// along under the store's write lock, in commit order (applied): they drop
// the items they wrote or deleted and add the access counts they added.
// Any other change (another process's write) leaves the cache behind the
// file; the next read that finds it so, with no write of this process
// under way, empties it and starts it again at its snapshot's generation.
// A read that cannot use gen (its snapshot is older, or a write of this
// process is between its commit and its update) checks each entry against
// its row's stamp (itemStamp) instead, one indexed query for all the hits,
// and keeps nothing.
//
// The cache also keeps the filtered columns of rows (filtercheck.go)
// under the same generation, dropped with the items: access counts do not
// change them, and they are not a filter's subject (maintained keys are
// left to SQL).
//
// Entries are shared by every request that reads them and must never be
// modified: the slicer redacts a copy (scs.Redact), and added access counts
// make a new entry rather than changing the old one.
//
// Its zero value is a cache that keeps nothing.
type itemCache struct {
	mu     sync.RWMutex
	budget int64 // bytes; 0: keep nothing
	gen    int64 // the item_generation every entry reflects; -1: none yet
	used   int64
	items  map[string]cachedItem
	// filters keeps the filtered columns of rows by item id, as of gen
	// (filtercheck.go), within the same budget.
	filters map[string]cachedFilter
	// sel is what the cache keeps once it cannot hold every item it is
	// given (itemselect.go).
	sel itemcache.Selection

	hits, misses atomic.Uint64 // items looked up by reads, found or not
}

// cachedFilter is a row's filtered columns and their estimated memory.
type cachedFilter struct {
	row  *filterRow
	size int64
}

// cachedItem is a decoded item and its estimated memory. The stamp of the
// row it was read from is stampOf(item), worked out when a read checks it
// rather than kept: a map entry of 32 bytes instead of 80, and only reads
// behind the cache's generation check stamps.
type cachedItem struct {
	item *h4r.Item
	size int64
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
	return itemCache{budget: max(budget, 0), gen: -1, items: map[string]cachedItem{}, filters: map[string]cachedFilter{}}
}

// lookup returns the entry of id, if any, and the generation the cache
// reflects.
func (c *itemCache) lookup(id string) (cachedItem, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.items[id]
	if ok && c.sel.On() {
		c.sel.Found(id)
	}
	return e, ok
}

// lookupAll puts the entries of ids into out, under one acquisition of
// the lock, and returns the ids it has none of and those of them to keep
// once read (putAll): all of them, unless the cache is selective; ok is
// false, and nothing is put, when the cache no longer reflects generation
// gen.
func (c *itemCache) lookupAll(gen int64, ids []string, out map[string]*h4r.Item) (missing, keep []string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.gen != gen {
		return nil, nil, false
	}
	sel := &c.sel
	for _, id := range ids {
		e, found := c.items[id]
		switch {
		case found:
			out[id] = e.item
			if sel.On() {
				sel.Found(id)
			}
		case !sel.On():
			missing = append(missing, id)
		default:
			missing = append(missing, id)
			if sel.Missed(id) {
				keep = append(keep, id)
			}
		}
	}
	if !sel.On() {
		keep = missing
	} else {
		sel.Counted(len(ids))
	}
	c.misses.Add(uint64(len(missing)))
	c.hits.Add(uint64(len(ids) - len(missing)))
	return missing, keep, true
}

// generation returns the generation the cache reflects.
func (c *itemCache) generation() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen
}

// restart empties the cache and makes it reflect generation gen, unless it
// reflects gen or a later one already.
func (c *itemCache) restart(gen int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen >= gen {
		return
	}
	c.gen, c.used = gen, 0
	clear(c.items)
	clear(c.filters)
	// A selective cache stays so: the store is as large as it was.
}

// checked returns the entry of id when its stamp is stamp (a read whose
// snapshot is not at the cache's generation); when only the access counts
// differ, it returns a copy of the entry's item with the row's counts.
func (c *itemCache) checked(id string, stamp itemStamp) (*h4r.Item, bool) {
	e, ok := c.lookup(id)
	var have itemStamp
	if ok {
		have = stampOf(e.item)
	}
	switch {
	case !ok || !have.sameContent(stamp):
		c.misses.Add(1)
		return nil, false
	case have == stamp:
		c.hits.Add(1)
		return e.item, true
	}
	c.hits.Add(1)
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
	return &it, true
}

// stampOf is the stamp of the row a decoded item came from.
func stampOf(it *h4r.Item) itemStamp {
	m := &it.Metadata
	st := itemStamp{version: m.Version, accessCount: m.AccessCount, byteSize: m.ByteSize, tokens: m.Tokens}
	if !m.LastAccessedAt.IsZero() {
		st.lastAccessedAt = formatTime(m.LastAccessedAt)
	}
	return st
}

// put keeps it, read in a snapshot at generation gen, unless the cache
// reflects another generation; past the budget, it forgets arbitrary
// entries (Go's map order) until a tenth of the budget is free.
func (c *itemCache) put(gen int64, it *h4r.Item) {
	size := itemcache.Footprint(it)
	if c.budget == 0 || size > c.budget/16 { // one huge item would push out many
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	c.keep(it, size)
}

// putAll keeps the items of ids in read (those it has), read in a
// snapshot at generation gen, as put does, under one acquisition of the
// lock.
func (c *itemCache) putAll(gen int64, ids []string, read map[string]*h4r.Item) {
	if c.budget == 0 || (len(ids) == 0 && !c.sel.Due()) {
		return
	}
	sizes := make([]int64, len(ids)) // estimated outside the lock
	for i, id := range ids {
		if it := read[id]; it != nil {
			sizes[i] = itemcache.Footprint(it)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep()
	if c.gen != gen {
		return
	}
	for i, id := range ids {
		if it := read[id]; it != nil && sizes[i] <= c.budget/16 {
			c.keep(it, sizes[i])
		}
	}
}

// keep adds it, of estimated memory size, and evicts past the budget; the
// caller holds mu.
func (c *itemCache) keep(it *h4r.Item, size int64) {
	if old, ok := c.items[it.ID]; ok {
		c.used -= old.size
	}
	c.items[it.ID] = cachedItem{item: it, size: size}
	c.used += size
	if c.sel.On() { // kept for this period: a read must find it in the next
		c.sel.Kept(it.ID)
	}
	c.evict()
}

// room is what the cache fills to: the budget less the tenth that
// eviction frees, so that a full cache does not evict at the next keep.
func (c *itemCache) room() int64 { return c.budget - c.budget/10 }

// evict forgets arbitrary entries (Go's map order), items first, until a
// tenth of the budget is free, when the cache is past its budget; the
// caller holds mu.
func (c *itemCache) evict() {
	if c.used <= c.budget {
		return
	}
	c.sel.Begin()
	for id, e := range c.items {
		if c.used <= c.room() {
			return
		}
		delete(c.items, id)
		c.used -= e.size
	}
	for id, e := range c.filters {
		if c.used <= c.room() {
			return
		}
		delete(c.filters, id)
		c.used -= e.size
	}
}

// lookupFilters returns the kept filter rows of ids and the ids it has
// none of.
func (c *itemCache) lookupFilters(ids []string) (map[string]*filterRow, []string) {
	out := make(map[string]*filterRow, len(ids))
	var missing []string
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, id := range ids {
		if e, ok := c.filters[id]; ok {
			out[id] = e.row
		} else {
			missing = append(missing, id)
		}
	}
	return out, missing
}

// putFilters keeps rows, read in a snapshot at generation gen, unless the
// cache reflects another generation.
func (c *itemCache) putFilters(gen int64, rows map[string]*filterRow) {
	if c.budget == 0 || len(rows) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	for id, r := range rows {
		if old, ok := c.filters[id]; ok {
			c.used -= old.size
		}
		size := r.footprint(id)
		c.filters[id] = cachedFilter{row: r, size: size}
		c.used += size
	}
	c.evict()
}

// applied moves the cache along a committed write of this process that
// moved item_generation from before to after: change drops or replaces the
// entries it made stale. The caller holds the store's write lock, so
// writes apply in commit order. When the cache was not at before, it is
// left as it is (behind the file) and the next read restarts it.
func (c *itemCache) applied(before, after int64, change func(c *itemCache)) {
	if c.budget == 0 || before == after {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != before {
		return
	}
	change(c)
	c.gen = after
}

// drop forgets the entries of ids; the caller holds mu.
func (c *itemCache) drop(ids []string) {
	for _, id := range ids {
		if e, ok := c.items[id]; ok {
			delete(c.items, id)
			c.used -= e.size
		}
		if e, ok := c.filters[id]; ok {
			delete(c.filters, id)
			c.used -= e.size
		}
	}
}

// addAccess replaces the entry of id, if any, with a copy that counts n
// more accesses, the last at last, as flushAccess's UPDATE does; the
// caller holds mu.
func (c *itemCache) addAccess(id string, n int64, last time.Time) {
	e, ok := c.items[id]
	if !ok {
		return
	}
	it := *e.item
	it.Metadata.AccessCount += n
	if stored := formatTime(last); stored > stampOf(e.item).lastAccessedAt {
		// As stored: the text's precision, read back as the row would be.
		it.Metadata.LastAccessedAt, _ = parseTime(stored)
	}
	e.item = &it
	c.items[id] = e
}

// len and bytes report the cache's size (tests, benchmarks).
func (c *itemCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.items)
}

// itemCacheAt reads tx's item generation and reports whether the cache
// reflects it. A cache behind it while no write of this process is under
// way (they update the cache under writeMu) was left behind by another
// process's write, and restarts at tx's generation.
func (s *Store) itemCacheAt(ctx context.Context, tx *sql.Tx) (gen int64, current bool, err error) {
	gen, err = s.readCounter(ctx, tx, itemCounter)
	if err != nil {
		return 0, false, err
	}
	if c := s.items.generation(); c < gen && s.vectors.writeMu.tryLock() {
		s.items.restart(gen)
		s.vectors.writeMu.Unlock()
	}
	return gen, s.items.generation() == gen, nil
}

// readItems returns the items with the given ids as tx sees them, by id
// (an id without an item is absent): from the cache when it reflects tx's
// snapshot (else when a row's stamp says the entry is current), the rest
// read and decoded by queryItems (and kept when the cache reflects tx's
// snapshot and, in a selective cache, was missed before: itemselect.go).
func (s *Store) readItems(ctx context.Context, tx *sql.Tx, ids []string) (map[string]*h4r.Item, error) {
	out := make(map[string]*h4r.Item, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if s.items.budget == 0 {
		return out, fetchItems(ctx, tx, ids, out)
	}
	gen, current, err := s.itemCacheAt(ctx, tx)
	if err != nil {
		return nil, err
	}
	if !current {
		return out, s.readChecked(ctx, tx, ids, out)
	}
	missing, keep, ok := s.items.lookupAll(gen, ids, out)
	if !ok { // a write of this process moved the cache on meanwhile
		return out, s.readChecked(ctx, tx, ids, out)
	}
	if err := fetchItems(ctx, tx, missing, out); err != nil {
		return nil, err
	}
	s.items.putAll(gen, keep, out)
	return out, nil
}

// readChecked fills out with the items of ids, using the cache's entries
// whose stamps are their rows' and reading the rest.
func (s *Store) readChecked(ctx context.Context, tx *sql.Tx, ids []string, out map[string]*h4r.Item) error {
	list, err := jsonList(ids)
	if err != nil {
		return err
	}
	stamps, err := readStamps(ctx, tx, list, len(ids))
	if err != nil {
		return err
	}
	var missing []string
	for id, st := range stamps {
		if it, ok := s.items.checked(id, st); ok {
			out[id] = it
		} else {
			missing = append(missing, id)
		}
	}
	return fetchItems(ctx, tx, missing, out)
}

// fetchItems reads and decodes the items of ids into out.
func fetchItems(ctx context.Context, tx *sql.Tx, ids []string, out map[string]*h4r.Item) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := jsonList(ids)
	if err != nil {
		return err
	}
	items, err := queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`, []any{list}, nil)
	if err != nil {
		return err
	}
	for _, it := range items {
		out[it.ID] = it
	}
	return nil
}

func readItemGeneration(ctx context.Context, tx *sql.Tx) (int64, error) {
	return readCounterSQL(ctx, tx, itemCounter)
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

// ItemCacheStats returns what the store's item cache holds, its items
// and their estimated memory, and how often reads found their items in
// it since the store opened: the figures its budget (WithItemCacheBytes)
// is sized by, and whether it has become selective (itemselect.go). A
// read whose generation the cache no longer reflects counts neither way.
func (s *Store) ItemCacheStats() itemcache.Stats {
	c := &s.items
	c.mu.RLock()
	defer c.mu.RUnlock()
	return itemcache.Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Items: len(c.items), Bytes: c.used, Selective: c.sel.On()}
}
