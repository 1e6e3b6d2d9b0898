package itemcache

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
)

// Stamp is what of a row says whether a decoded copy of it is current.
// Version covers every column but the ones after it, which change without
// a new version: access counts, and the size and tokens a recount with
// another token encoding rewrites.
type Stamp struct {
	Version        int
	AccessCount    int64
	LastAccessedAt time.Time // zero for never
	ByteSize       int
	Tokens         int
}

// StampOf is the stamp of the row a decoded item came from.
func StampOf(it *h4r.Item) Stamp {
	m := &it.Metadata
	return Stamp{Version: m.Version, AccessCount: m.AccessCount, LastAccessedAt: m.LastAccessedAt,
		ByteSize: m.ByteSize, Tokens: m.Tokens}
}

// SameContent reports whether two stamps are of the same content: they may
// differ in access counts only.
func (a Stamp) SameContent(b Stamp) bool {
	return a.Version == b.Version && a.ByteSize == b.ByteSize && a.Tokens == b.Tokens
}

// Equal reports whether two stamps are the same, access counts included.
func (a Stamp) Equal(b Stamp) bool {
	return a.SameContent(b) && a.AccessCount == b.AccessCount && a.LastAccessedAt.Equal(b.LastAccessedAt)
}

// Footprint estimates the memory of a decoded item: its text, its content
// and metadata decoded (maps and interfaces take about twice the JSON they
// came from; ByteSize is the delivered JSON, text included), its links,
// and the fixed parts.
func Footprint(it *h4r.Item) int64 {
	n := 512 + int64(len(it.ID)) + int64(len(it.Text)) + 2*int64(it.Metadata.ByteSize)
	for _, l := range it.Links {
		n += 96 + int64(len(l.Target)+len(l.Type)+len(l.Context))
	}
	return n + 64*int64(len(it.Metadata.Extra)+len(it.Metadata.Tags))
}

// Cache keeps decoded items up to a memory budget (estimated by
// Footprint). It is safe for concurrent use. Entries are shared by every
// reader and must never be modified: the slicer redacts a copy, and Get
// returns a copy when only the access counts moved. Once it has to evict,
// it keeps selectively (Selection): Get tells its caller to Put an item
// only at its second miss in a period.
type Cache struct {
	mu     sync.RWMutex
	budget int64
	used   int64
	items  map[string]entry
	sel    Selection

	hits, misses atomic.Uint64 // Get's answers
}

// entry is a decoded item and its estimated memory. Its stamp is
// StampOf(item), worked out by Get rather than kept: a map entry of 32
// bytes instead of 88.
type entry struct {
	item *h4r.Item
	size int64
}

// New returns a cache of at most budget bytes; budget <= 0 gives a cache
// that keeps nothing (Enabled is false).
func New(budget int64) *Cache {
	return &Cache{budget: max(budget, 0), items: map[string]entry{}}
}

// Enabled reports whether the cache keeps anything.
func (c *Cache) Enabled() bool { return c.budget > 0 }

// Get returns the item with id when the cache holds it at stamp st, the
// stamp its row carries now. When only the access counts differ it returns
// a copy of the entry with the row's counts (shallow: everything else is
// shared and read-only). On a miss, keep says whether to Put the item once
// read: always, unless the cache is selective and this is the item's
// first miss in the period.
func (c *Cache) Get(id string, st Stamp) (it *h4r.Item, ok, keep bool) {
	c.mu.RLock()
	e, found := c.items[id]
	var have Stamp
	if found {
		have = StampOf(e.item)
	}
	fresh := found && have.SameContent(st)
	keep = !fresh
	due := false
	if c.sel.On() {
		c.sel.Counted(1)
		if fresh {
			c.sel.Found(id)
		} else {
			keep = c.sel.Missed(id)
		}
		due = c.sel.Due()
	}
	c.mu.RUnlock()
	if due { // this lookup ended the period
		c.mu.Lock()
		c.sweep()
		c.mu.Unlock()
	}
	switch {
	case !fresh:
		c.misses.Add(1)
		return nil, false, keep
	case have.Equal(st):
		c.hits.Add(1)
		return e.item, true, false
	}
	c.hits.Add(1)
	cp := *e.item
	cp.Metadata.AccessCount = st.AccessCount
	cp.Metadata.LastAccessedAt = st.LastAccessedAt
	return &cp, true, false
}

// Put keeps it, as decoded from its row, replacing the entry of its id
// (call it when Get said to keep it). Past the budget the cache becomes
// selective and forgets arbitrary entries (Go's map order) until a tenth
// of the budget is free; an item over a sixteenth of the budget is not
// kept, as it would push out many.
func (c *Cache) Put(it *h4r.Item) {
	size := Footprint(it)
	if c.budget == 0 || size > c.budget/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep()
	if c.sel.On() {
		c.sel.Kept(it.ID) // a read must find it in the next period
	}
	if old, ok := c.items[it.ID]; ok {
		c.used -= old.size
	}
	c.items[it.ID] = entry{item: it, size: size}
	c.used += size
	if c.used <= c.budget {
		return
	}
	c.sel.Begin()
	for id, e := range c.items {
		if c.used <= c.budget-c.budget/10 {
			break
		}
		delete(c.items, id)
		c.used -= e.size
	}
}

// sweep ends a selective cache's period that is over (Get, at the
// lookup that ends it, or Put): it drops the entries no read found during
// it and starts the next. The caller holds mu for writing.
func (c *Cache) sweep() {
	if !c.sel.Due() {
		return
	}
	c.sel.Sweep(maps.Keys(c.items), func(id string) {
		c.used -= c.items[id].size
		delete(c.items, id)
	})
}

// Drop forgets the entries of ids (a store's own deletes: their memory
// is freed at once rather than when the budget pushes them out).
func (c *Cache) Drop(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.items[id]; ok {
			delete(c.items, id)
			c.used -= e.size
		}
	}
}

// Len returns the number of entries (tests, benchmarks).
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.items)
}

// Stats is what a cache holds and how often it was asked: the figures an
// operator sizes its budget by (h4r_item_cache_* in /metrics).
type Stats struct {
	Hits, Misses uint64 // lookups answered from the cache, and not, since it started
	Items        int    // items held
	Bytes        int64  // the estimated memory of what it holds (Footprint)
	// Selective: the cache keeps only the items reads come back to
	// (Selection), as it does once it has had to evict, or, on the
	// embedded store, once warming found the store larger than the budget.
	Selective bool
}

// Stats returns the cache's figures.
func (c *Cache) Stats() Stats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Items: len(c.items), Bytes: c.used, Selective: c.sel.On()}
}
