package sqlite

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/itemcache"
)

// A cache that cannot hold every item of its store keeps selectively. It
// becomes so when it first has to evict, or when WarmItems finds the store
// larger than the budget, and stays so for the life of the process.
//
// What such a cache holds pays for its memory only in the items reads come
// back to: under reads spread over a store many times its budget, most of
// a full cache holds items no later read finds (at 1M, a full cache found
// a third of the lookups and a selective one a fifth, with half the items
// and in the same time a pack:
// bench/results/2026-12-02/selective-item-cache.md). So lookups are
// counted in periods of selectPeriodLookups:
//   - a missed item is kept only when it was missed before in the same
//     period (seen), so an item read once is decoded and let go;
//   - at the end of a period, the entries no read found during it (read)
//     are dropped.
//
// An item is kept, then, while it is read more often than about once a
// period: traffic that returns to some items keeps them, up to the
// budget; traffic spread evenly over a large store keeps few.
//
// The two sets are bit sets over a hash of the id. A collision keeps an
// item a period longer or lets one in a read early, never serves an item
// another read did not keep: the map is still the cache.

// selectPeriodLookups is how many lookups make a period: a pack looks up
// about a hundred items, so a period is a few thousand packs.
const selectPeriodLookups = 1 << 18

// selectBits is the size of each of the sets, in bits: a period marks at
// most selectPeriodLookups of them, so that at most one in sixteen is set
// and a first read is taken for a second about as rarely.
const selectBits = 1 << 22

// idBits is a set of ids by their hash. Marks are set under the cache's
// read lock, hence atomically; clear runs under its write lock.
type idBits []atomic.Uint64

func newIDBits() idBits { return make(idBits, selectBits/64) }

// mark sets h's bit and reports whether it was set before.
func (b idBits) mark(h uint64) bool {
	h %= selectBits
	m := uint64(1) << (h % 64)
	return b[h/64].Or(m)&m != 0
}

func (b idBits) has(h uint64) bool {
	h %= selectBits
	return b[h/64].Load()&(uint64(1)<<(h%64)) != 0
}

func (b idBits) clear() {
	for i := range b {
		b[i].Store(0)
	}
}

// selection is what a selective cache keeps of its reads. Its zero value
// is a cache that is not selective.
type selection struct {
	on         bool // set under the cache's write lock
	seed       maphash.Seed
	seen, read idBits
	lookups    atomic.Int64 // in this period
	period     int64        // lookups a period; 0: selectPeriodLookups (tests set less)
}

func (s *selection) hash(id string) uint64 { return maphash.String(s.seed, id) }

func (s *selection) periodLookups() int64 {
	if s.period > 0 {
		return s.period
	}
	return selectPeriodLookups
}

// begin makes the cache selective; the caller holds its write lock.
func (s *selection) begin() {
	if s.on {
		return
	}
	s.on, s.seed = true, maphash.MakeSeed()
	s.seen, s.read = newIDBits(), newIDBits()
}

// due reports whether a period has ended, for the next keep to sweep.
func (s *selection) due() bool { return s.lookups.Load() >= s.periodLookups() }

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
	c.sel.begin()
}

// isSelective reports whether the cache keeps selectively.
func (c *itemCache) isSelective() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.sel.on
}

// sweep ends a period that is over: it drops the entries no read found
// during it and starts the next. The caller holds mu.
func (c *itemCache) sweep() {
	if !c.sel.on || !c.sel.due() {
		return
	}
	for id, e := range c.items {
		if !c.sel.read.has(c.sel.hash(id)) {
			delete(c.items, id)
			c.used -= e.size
		}
	}
	c.sel.seen.clear()
	c.sel.read.clear()
	c.sel.lookups.Store(0)
}
