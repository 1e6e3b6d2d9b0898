package itemcache

import (
	"hash/maphash"
	"sync/atomic"
)

// A cache that cannot hold every item of its store keeps selectively: it
// becomes so when it first has to evict (or, on the embedded store, when
// warming finds the store larger than the budget), and stays so for the
// life of the process.
//
// What such a cache holds pays for its memory only in the items reads come
// back to: under reads spread over a store many times its budget, most of
// a full cache holds items no later read finds (at 1M, a full cache found
// a third of the lookups and a selective one a fifth, with half the items
// and in the same time a pack:
// bench/results/2026-12-02/selective-item-cache.md). So lookups are
// counted in periods of PeriodLookups:
//   - a missed item is kept only when it was missed before in the same
//     period (seen), so an item read once is decoded and let go;
//   - at the end of a period, the entries no read found during it (read)
//     are dropped.
//
// An item is kept, then, while it is read more often than about once a
// period: traffic that returns to some items keeps them, up to the
// budget; traffic spread evenly over a large store keeps few.
//
// The sets are bit sets over a seeded hash of the id. A collision keeps
// an item a period longer or lets one in at its first miss; it never
// serves an item another read did not keep: the cache's map is still the
// cache.

// PeriodLookups is how many lookups make a period: a pack looks up about
// a hundred items, so a period is a few thousand packs.
const PeriodLookups = 1 << 18

// selectionBits is the size of each set, in bits: a period marks at most
// PeriodLookups of them, so that at most one in sixteen is set and a first
// miss is taken for a second about as rarely.
const selectionBits = 1 << 22

// idBits is a set of ids by their hash. Marks are atomic, so that readers
// holding a cache's read lock may set them; clear needs the write lock.
type idBits []atomic.Uint64

// newIDBits returns an empty set (512 KiB).
func newIDBits() idBits { return make(idBits, selectionBits/64) }

// mark sets h's bit and reports whether it was set before.
func (b idBits) mark(h uint64) bool {
	h %= selectionBits
	m := uint64(1) << (h % 64)
	return b[h/64].Or(m)&m != 0
}

// has reports whether h's bit is set.
func (b idBits) has(h uint64) bool {
	h %= selectionBits
	return b[h/64].Load()&(uint64(1)<<(h%64)) != 0
}

// clear empties the set.
func (b idBits) clear() {
	for i := range b {
		b[i].Store(0)
	}
}

// Selection is what a selective cache keeps of its reads. Its zero value
// is a cache that is not selective. Begin and Sweep run under the cache's
// write lock; Found, Missed and Kept under its read lock at least;
// On, Counted and Due anywhere.
type Selection struct {
	on         atomic.Bool // set last by Begin
	seed       maphash.Seed
	seen, read idBits
	lookups    atomic.Int64 // in this period
	period     int64        // lookups a period; 0: PeriodLookups
}

// On reports whether the cache keeps selectively.
func (s *Selection) On() bool { return s.on.Load() }

// hash is the hash the sets hold id by.
func (s *Selection) hash(id string) uint64 { return maphash.String(s.seed, id) }

// SetPeriod sets the lookups a period (tests); 0 restores PeriodLookups.
func (s *Selection) SetPeriod(n int64) { s.period = n }

func (s *Selection) periodLookups() int64 {
	if s.period > 0 {
		return s.period
	}
	return PeriodLookups
}

// Begin makes the cache selective.
func (s *Selection) Begin() {
	if s.on.Load() {
		return
	}
	s.seed = maphash.MakeSeed()
	s.seen, s.read = newIDBits(), newIDBits()
	s.on.Store(true)
}

// Found records that a lookup found id's entry.
func (s *Selection) Found(id string) { s.read.mark(s.hash(id)) }

// Missed records that a lookup missed id and reports whether to keep it
// once read: it was missed before in this period.
func (s *Selection) Missed(id string) bool { return s.seen.mark(s.hash(id)) }

// Kept records that id's entry was kept in this period, so that the sweep
// at its end leaves it for reads of the next.
func (s *Selection) Kept(id string) { s.read.mark(s.hash(id)) }

// Counted adds n lookups to the period.
func (s *Selection) Counted(n int) { s.lookups.Add(int64(n)) }

// Due reports whether a period has ended, for the cache to sweep.
func (s *Selection) Due() bool { return s.on.Load() && s.lookups.Load() >= s.periodLookups() }

// Sweep ends a period that is over: it calls drop with each id of ids
// that no read found during it, then starts the next period. ids ranges
// over the cache's entries (a map's keys, say).
func (s *Selection) Sweep(ids func(yield func(string) bool), drop func(id string)) {
	if !s.Due() {
		return
	}
	for id := range ids {
		if !s.read.has(s.hash(id)) {
			drop(id)
		}
	}
	s.seen.clear()
	s.read.clear()
	s.lookups.Store(0)
}
