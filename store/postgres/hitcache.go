package postgres

import (
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/itemcache"
)

// hitCache keeps the items graph hits decoded, by id, for the walk in
// memory (memgraph.go): decoding an item's content and metadata JSON was
// half of that path's CPU (BenchmarkGraphCISI). An item's version is
// never reused (deleted_versions), and every change to its text, content
// or metadata raises it, so a decoded item of the row's version is the
// row's item but for the columns that change without a new version
// (access counts, tokens, byte size, updated_at), which every read takes
// from the row. The read sends the version it holds for each item reached;
// the row of an item at that version comes back without its text, content
// and metadata.
//
// Entries are shared by every request that reads them and never
// modified: a hit gets a copy of the entry's item with the row's columns
// and the links from memory (the slicer redacts a copy, as it does for
// the embedded store's cache).
type hitCache struct {
	mu     sync.RWMutex
	budget int64 // bytes; 0: keep nothing
	used   int64
	items  map[string]cachedHit
}

type cachedHit struct {
	item *h4r.Item // Links nil; the fields the row gives are the row's at decoding
	size int64
}

// defaultHitCacheBytes bounds the hit cache of a replica.
const defaultHitCacheBytes = 64 << 20

// WithHitCacheBytes sets the memory, estimated per item, of the cache of
// decoded graph hits (default 64 MiB; 0 turns it off).
func WithHitCacheBytes(n int64) Option { return func(o *options) { o.hitCacheBytes = n } }

func newHitCache(budget int64) hitCache {
	return hitCache{budget: max(budget, 0), items: map[string]cachedHit{}}
}

// versions returns, for each id, the version of its cached item (0: none)
// and the cached items by id.
func (c *hitCache) versions(ids []string) ([]int32, map[string]*h4r.Item) {
	out := make([]int32, len(ids))
	held := map[string]*h4r.Item{}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.items) == 0 {
		return out, held
	}
	for i, id := range ids {
		if e, ok := c.items[id]; ok {
			out[i] = int32(e.item.Metadata.Version)
			held[id] = e.item
		}
	}
	return out, held
}

// keep adds decoded items (without links); past the budget, it forgets
// arbitrary entries (Go's map order) until a tenth of the budget is free.
func (c *hitCache) keep(items []*h4r.Item) {
	if c.budget == 0 || len(items) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		size := itemcache.Footprint(it) // links nil here: they come from memory
		if size > c.budget/16 {         // one huge item would push out many
			continue
		}
		if old, ok := c.items[it.ID]; ok {
			c.used -= old.size
		}
		c.items[it.ID] = cachedHit{item: it, size: size}
		c.used += size
	}
	if c.used <= c.budget {
		return
	}
	for id, e := range c.items {
		delete(c.items, id)
		c.used -= e.size
		if c.used <= c.budget-c.budget/10 {
			return
		}
	}
}
