package sqlite

import (
	"maps"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/itemcache"
)

// A cache that cannot hold every item of its store keeps selectively
// (itemcache.Selection says how): it becomes so when it first has to
// evict, or when WarmItems finds the store larger than the budget, and
// stays so for the life of the process.

// couldHold reports whether the cache's room could hold n items of the
// sizes of sample, on average: what WarmItems asks before it fills.
func (c *itemCache) couldHold(n int, sample []*h4r.Item) bool {
	if len(sample) == 0 {
		return true
	}
	var sum int64
	for _, it := range sample {
		sum += itemcache.Footprint(it)
	}
	return int64(n)*(sum/int64(len(sample))) <= c.room()
}

// beSelective makes the cache selective (WarmItems, when the store is
// larger than its budget).
func (c *itemCache) beSelective() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sel.Begin()
}

// isSelective reports whether the cache keeps selectively.
func (c *itemCache) isSelective() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.sel.On()
}

// sweep ends a period that is over: it drops the entries no read found
// during it and starts the next. The caller holds mu.
func (c *itemCache) sweep() {
	c.sel.Sweep(maps.Keys(c.items), func(id string) {
		c.used -= c.items[id].size
		delete(c.items, id)
	})
}
