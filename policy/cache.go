package policy

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"

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
// It is safe for concurrent use, and shared across policy reloads.
type Cache struct {
	lru    *expirable.LRU[cacheKey, cacheEntry]
	hits   atomic.Uint64
	misses atomic.Uint64
}

type cacheKey struct {
	revision   string
	specialist string
	item       string // "" for pack settings
	version    int
	pack       bool
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
	return &Cache{lru: expirable.NewLRU[cacheKey, cacheEntry](size, nil, ttl)}
}

// Stats returns the hit and miss counters and the number of entries.
func (c *Cache) Stats() h4r.PolicyCacheStats {
	return h4r.PolicyCacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Entries: c.lru.Len()}
}

// Purge empties the cache (the counters stay).
func (c *Cache) Purge() { c.lru.Purge() }

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

func (c *Cached) key(spec string, item *h4r.Item) (cacheKey, bool) {
	if item == nil || item.Metadata.Version <= 0 {
		return cacheKey{}, false
	}
	return cacheKey{revision: c.inner.Revision(), specialist: spec, item: item.ID, version: item.Metadata.Version}, true
}

func (c *Cached) lookup(k cacheKey) (cacheEntry, bool) {
	e, ok := c.cache.lru.Get(k)
	if ok {
		c.cache.hits.Add(1)
	} else {
		c.cache.misses.Add(1)
	}
	return e, ok
}

// Decide answers from the cache or asks the wrapped policy.
func (c *Cached) Decide(ctx context.Context, spec h4r.Specialist, item *h4r.Item) (h4r.Decision, error) {
	k, cacheable := c.key(specialistKey(spec), item)
	if cacheable {
		if e, ok := c.lookup(k); ok {
			return cloneDecision(e.decision), nil
		}
	}
	d, err := c.inner.Decide(ctx, spec, item)
	if err == nil && cacheable {
		c.cache.lru.Add(k, cacheEntry{decision: cloneDecision(d)})
	}
	return d, err
}

// DecideBatch answers what it can from the cache and asks the wrapped
// policy for the rest in one batch.
func (c *Cached) DecideBatch(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []h4r.DecisionResult {
	out := make([]h4r.DecisionResult, len(items))
	sk := specialistKey(spec)
	keys := make([]cacheKey, len(items))
	cacheable := make([]bool, len(items))
	var missIdx []int
	var missItems []*h4r.Item
	for i, it := range items {
		keys[i], cacheable[i] = c.key(sk, it)
		if cacheable[i] {
			if e, ok := c.lookup(keys[i]); ok {
				out[i].Decision = cloneDecision(e.decision)
				continue
			}
		}
		missIdx = append(missIdx, i)
		missItems = append(missItems, it)
	}
	if len(missItems) == 0 {
		return out
	}
	for j, r := range c.inner.DecideBatch(ctx, spec, missItems) {
		i := missIdx[j]
		out[i] = r
		if r.Err == nil && cacheable[i] {
			c.cache.lru.Add(keys[i], cacheEntry{decision: cloneDecision(r.Decision)})
		}
	}
	return out
}

// PackSettings answers from the cache or asks the wrapped policy.
func (c *Cached) PackSettings(ctx context.Context, spec h4r.Specialist) (h4r.PackSettings, error) {
	k := cacheKey{revision: c.inner.Revision(), specialist: specialistKey(spec), pack: true}
	if e, ok := c.lookup(k); ok {
		return e.pack, nil
	}
	ps, err := c.inner.PackSettings(ctx, spec)
	if err == nil {
		c.cache.lru.Add(k, cacheEntry{pack: ps})
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
