package policy

import (
	"sync"
	"sync/atomic"
)

// clockCache is a map of at most a fixed number of entries, each kept for
// a time to live, that evicts by CLOCK (second chance), an approximation
// of least recently used: a lookup marks its entry referenced, and to make
// room the clock hand passes over the ring of entries, taking the first
// one that is expired or unreferenced and clearing the marks it passes.
//
// It is what the decision cache needs on the hot path of a pack or a
// context bridge miss, which looks up dozens of decisions at once: a
// lookup takes a shard's read lock and changes nothing but the mark, so
// concurrent lookups do not queue on one mutex (a strict LRU moves the
// entry to the front of a list under an exclusive lock on every hit, and
// a contended sync.Mutex hands itself over and yields the processor), and
// the caller reads the clock once per batch, not per key.
//
// Keys are found by a 64-bit hash the caller gives (one hash of the key
// picks the shard and the map entry), and compared whole, so that two
// keys with one hash only take each other's place.
//
// Times are nanoseconds on the caller's monotonic clock (Cache.now).
type clockCache[K comparable, V any] struct {
	hash   func(K) uint64
	shards []clockShard[K, V]
	ttl    int64
}

type clockShard[K comparable, V any] struct {
	mu    sync.RWMutex
	at    map[uint64]int // index in ring, by hash
	ring  []clockEntry[K, V]
	hand  int
	limit int
	_     [64]byte // keep shards' locks off one cache line
}

type clockEntry[K comparable, V any] struct {
	hash       uint64
	key        K
	value      V
	expires    int64
	referenced atomic.Bool
}

// clockShards is how many shards a cache has at most: enough that a few
// cores rarely meet on one lock.
const clockShards = 16

// newClockCache returns a cache of at most size entries (size >= 1), each
// kept for ttl nanoseconds, in up to clockShards shards, that finds keys
// by hash (well mixed in its high bits, which pick the shard).
func newClockCache[K comparable, V any](size int, ttl int64, hash func(K) uint64) *clockCache[K, V] {
	n := 1
	for n < clockShards && n*2 <= size {
		n *= 2
	}
	return newClockCacheOf[K, V](size, n, ttl, hash)
}

// newClockCacheOf is newClockCache with n shards (a power of two).
func newClockCacheOf[K comparable, V any](size, n int, ttl int64, hash func(K) uint64) *clockCache[K, V] {
	c := &clockCache[K, V]{hash: hash, shards: make([]clockShard[K, V], n), ttl: ttl}
	for i := range c.shards {
		// The shards share size out, the first ones taking the remainder,
		// so that the cache never holds more than size.
		s := &c.shards[i]
		s.at, s.limit = map[uint64]int{}, size/n
		if i < size%n {
			s.limit++
		}
	}
	return c
}

// shard is the shard of a hash: its high bits, the map takes the rest.
func (c *clockCache[K, V]) shard(h uint64) *clockShard[K, V] {
	return &c.shards[(h>>32)%uint64(len(c.shards))]
}

// get returns the value of k if it is there and not expired at now.
func (c *clockCache[K, V]) get(k K, now int64) (V, bool) {
	h := c.hash(k)
	s := c.shard(h)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i, ok := s.at[h]; ok {
		e := &s.ring[i]
		if e.key == k && now < e.expires {
			if !e.referenced.Load() { // a store only when it changes
				e.referenced.Store(true)
			}
			return e.value, true
		}
	}
	var zero V
	return zero, false
}

// add sets k's value, to expire ttl after now, making room if needed.
func (c *clockCache[K, V]) add(k K, v V, now int64) {
	h := c.hash(k)
	s := c.shard(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.at[h]; ok {
		e := &s.ring[i]
		if e.key != k { // a key with k's hash, which k replaces: unmarked, as a new entry
			e.referenced.Store(false)
		}
		e.key, e.value, e.expires = k, v, now+c.ttl
		return
	}
	if len(s.ring) < s.limit {
		s.at[h] = len(s.ring)
		s.ring = append(s.ring, clockEntry[K, V]{hash: h, key: k, value: v, expires: now + c.ttl})
		return
	}
	// The hand goes round at most twice: once clearing marks, once
	// finding an entry it cleared.
	for {
		e := &s.ring[s.hand]
		if e.expires <= now || !e.referenced.Load() {
			break
		}
		e.referenced.Store(false)
		s.hand = (s.hand + 1) % len(s.ring)
	}
	e := &s.ring[s.hand]
	delete(s.at, e.hash)
	e.hash, e.key, e.value, e.expires = h, k, v, now+c.ttl
	e.referenced.Store(false)
	s.at[h] = s.hand
	s.hand = (s.hand + 1) % len(s.ring)
}

// len is the number of entries, expired ones included.
func (c *clockCache[K, V]) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.ring)
		s.mu.RUnlock()
	}
	return n
}

// purge empties the cache.
func (c *clockCache[K, V]) purge() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.at)
		s.ring, s.hand = nil, 0
		s.mu.Unlock()
	}
}
