package policy

import (
	"context"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
)

// DefaultCacheSize is how many decisions a Cache holds when NewCache is
// given no size.
const DefaultCacheSize = 100_000

// Cache keeps policy decisions for a while: keyed by the policy revision,
// the specialist (every field the policy input carries) and the item's id
// and version, so that a new policy or a new version of the item is never
// answered from the cache. Only decisions that were made are kept; an
// error is never cached, so a failed decision is retried (and meanwhile
// fails closed) on the next request.
//
// A decision can be stale for at most the TTL if the policy reads metadata
// the store changes without a new version (accessCount, lastAccessedAt).
// Items without a version (not from a store) are never cached.
//
// It is safe for concurrent use, and shared across policy reloads. When
// full it evicts by CLOCK, close to least recently used (clockCache).
type Cache struct {
	entries *clockCache[cacheKey, cacheEntry]
	start   time.Time // Cache.now counts from it, on the monotonic clock
	hits    atomic.Uint64
	misses  atomic.Uint64
	// scopes numbers each policy revision and specialist decided for, so
	// that a key hashes and compares one number instead of both strings
	// (a cache miss of the context bridge looks up 50 decisions).
	// Numbers are never reused: when scopes is full it is emptied, and
	// the entries of a forgotten scope are never hit again.
	scopesMu  sync.Mutex
	scopes    map[scopeName]uint64
	lastScope uint64
}

// maxScopes bounds Cache.scopes.
const maxScopes = 4096

// scopeName is what a scope number stands for.
type scopeName struct{ revision, specialist string }

type cacheKey struct {
	scope   uint64 // Cache.scope(revision, specialistKey(spec))
	item    string // "" for pack settings
	version int
	pack    bool
}

// hash is the key's hash with seed: the item id's, mixed with the rest
// (one pass over the id, where hashing the struct and then looking it up
// in a map took two).
func (k cacheKey) hash(seed maphash.Seed) uint64 {
	h := maphash.String(seed, k.item)
	h ^= k.scope * 0x9e3779b97f4a7c15
	h ^= uint64(k.version) * 0xc2b2ae3d27d4eb4f
	if k.pack {
		h ^= 0x165667b19e3779f9
	}
	// A finalizer (splitmix64's): every input bit reaches the high bits,
	// which pick the shard.
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

type cacheEntry struct {
	decision h4r.Decision
	pack     h4r.PackSettings
}

// NewCache returns a cache of at most size decisions (DefaultCacheSize if
// size <= 0), each kept for ttl (> 0).
func NewCache(size int, ttl time.Duration) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	seed := maphash.MakeSeed()
	return &Cache{entries: newClockCache[cacheKey, cacheEntry](size, int64(ttl), func(k cacheKey) uint64 { return k.hash(seed) }),
		start: time.Now(), scopes: map[scopeName]uint64{}}
}

// now is the time entries expire by: nanoseconds since the cache began.
func (c *Cache) now() int64 { return int64(time.Since(c.start)) }

// scope returns the number of a policy revision and a specialist's key.
func (c *Cache) scope(revision, specialist string) uint64 {
	name := scopeName{revision, specialist}
	c.scopesMu.Lock()
	defer c.scopesMu.Unlock()
	if n, ok := c.scopes[name]; ok {
		return n
	}
	if len(c.scopes) >= maxScopes {
		clear(c.scopes)
	}
	c.lastScope++
	c.scopes[name] = c.lastScope
	return c.lastScope
}

// Stats returns the hit and miss counters and the number of entries
// (expired ones are counted until an add takes their place).
func (c *Cache) Stats() h4r.PolicyCacheStats {
	return h4r.PolicyCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: c.entries.len()}
}

// Purge empties the cache (the counters stay).
func (c *Cache) Purge() { c.entries.purge() }

// Decider is a policy the cache can front: the embedded Engine or Remote.
type Decider interface {
	Revision() string
	Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error)
	DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult
	PackSettings(ctx context.Context, spec h4r.Specialist) (h4r.PackSettings, error)
}

// Wrap returns d with its decisions cached in c. Wrapping is cheap (live
// reload wraps each new engine); the cache is c's.
func (c *Cache) Wrap(d Decider) *Cached { return &Cached{inner: d, cache: c} }

// Cached is a Decider whose decisions are cached (Cache.Wrap).
type Cached struct {
	inner Decider
	cache *Cache
}

// Revision is the wrapped policy's.
func (c *Cached) Revision() string { return c.inner.Revision() }

// Source is the wrapped policy's, when it has one.
func (c *Cached) Source() string {
	if s, ok := c.inner.(interface{ Source() string }); ok {
		return s.Source()
	}
	return ""
}

// specialistKey identifies the specialist part of the policy input.
// Every part is length-prefixed, so no two specialists share a key.
func specialistKey(spec h4r.Specialist) string {
	var b strings.Builder
	for _, s := range append([]string{spec.Type, spec.ID, spec.SecurityLevel.String()}, spec.AuthorizedGroups...) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
	}
	return b.String()
}

// scope is the number of the wrapped policy's revision and spec.
func (c *Cached) scope(spec h4r.Specialist) uint64 {
	return c.cache.scope(c.inner.Revision(), specialistKey(spec))
}

func (c *Cached) key(scope uint64, item *h4r.Item) (cacheKey, bool) {
	if item == nil || item.Metadata.Version <= 0 {
		return cacheKey{}, false
	}
	return cacheKey{scope: scope, item: item.ID, version: item.Metadata.Version}, true
}

func (c *Cached) lookup(k cacheKey, now int64) (cacheEntry, bool) {
	e, ok := c.cache.entries.get(k, now)
	if ok {
		c.cache.hits.Add(1)
	} else {
		c.cache.misses.Add(1)
	}
	return e, ok
}

// Decide answers from the cache or asks the wrapped policy.
func (c *Cached) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	k, cacheable := c.key(c.scope(spec), item)
	if cacheable {
		if e, ok := c.lookup(k, c.cache.now()); ok {
			return cloneDecision(e.decision), nil
		}
	}
	d, err := c.inner.Decide(ctx, spec, item)
	if err == nil && cacheable {
		c.cache.entries.add(k, cacheEntry{decision: cloneDecision(d)}, c.cache.now())
	}
	return d, err
}

// DecideBatch answers what it can from the cache and asks the wrapped
// policy for the rest in one batch.
func (c *Cached) DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	out := make([]h4r.DecisionResult, len(items))
	sk := c.scope(spec)
	rest := c.answer(sk, c.cache.now(), items, out)
	if len(rest) == 0 {
		return out
	}
	restItems := make([]*h4r.Item, len(rest))
	misses := 0
	for j, i := range rest {
		restItems[j] = items[i]
		if _, cacheable := c.key(sk, items[i]); cacheable {
			misses++ // looked up and not found; the others cannot be cached
		}
	}
	c.cache.misses.Add(uint64(misses))
	decided := c.inner.DecideBatch(ctx, spec, restItems)
	now := c.cache.now() // the entries live from when they were decided
	for j, r := range decided {
		out[rest[j]] = r
		if k, cacheable := c.key(sk, items[rest[j]]); cacheable && r.Err == nil {
			c.cache.entries.add(k, cacheEntry{decision: cloneDecision(r.Decision)}, now)
		}
	}
	return out
}

// DecideCached answers the items whose decisions are in the cache, into
// out (one per item), and returns the positions of the others, for
// DecideBatch. It never asks the policy, so a caller can answer a warm
// batch at once and share only the rest out among workers. The rest are
// counted (hit or miss) when DecideBatch looks them up.
func (c *Cached) DecideCached(spec h4r.Specialist, items []*h4r.Item, out []h4r.DecisionResult) (rest []int) {
	return c.answer(c.scope(spec), c.cache.now(), items, out)
}

// answer fills out with the decisions of items cached for scope sk at now,
// counts them as hits, and returns the positions of the others, in order.
func (c *Cached) answer(sk uint64, now int64, items []*h4r.Item, out []h4r.DecisionResult) (rest []int) {
	hits := 0
	for i, it := range items {
		if k, cacheable := c.key(sk, it); cacheable {
			if e, ok := c.cache.entries.get(k, now); ok {
				out[i] = h4r.DecisionResult{Decision: cloneDecision(e.decision)}
				hits++
				continue
			}
		}
		rest = append(rest, i)
	}
	c.cache.hits.Add(uint64(hits))
	return rest
}

// PackSettings answers from the cache or asks the wrapped policy.
func (c *Cached) PackSettings(ctx context.Context, spec h4r.Specialist) (h4r.PackSettings, error) {
	k := cacheKey{scope: c.scope(spec), pack: true}
	if e, ok := c.lookup(k, c.cache.now()); ok {
		return e.pack, nil
	}
	ps, err := c.inner.PackSettings(ctx, spec)
	if err == nil {
		c.cache.entries.add(k, cacheEntry{pack: ps}, c.cache.now())
	}
	return ps, err
}

// cloneDecision copies the field list so that callers cannot change a
// cached decision.
func cloneDecision(d h4r.Decision) h4r.Decision {
	d.RedactedFields = slices.Clone(d.RedactedFields)
	if d.RedactedFields == nil {
		d.RedactedFields = []string{}
	}
	return d
}
