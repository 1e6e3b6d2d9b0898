package auth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per key and route class: a key with a limit of
// n per minute may burst n requests of a class, then one every 60/n
// seconds. Each class has its own bucket, so that a key's ingests never use
// up its context requests (or the reverse). Buckets exist only for keys in
// the keys file and the classes (and RouteMCP), so their number is bounded.
type Limiter struct {
	perMinute int // the default for keys without their own limit
	mu        sync.Mutex
	buckets   map[bucketKey]*rate.Limiter
}

// RouteMCP is the rate-limit bucket of MCP requests (/mcp): not a class a
// key is granted (any valid key may open a session, and each tool checks
// its own class), only a bucket of its own.
const RouteMCP Route = "mcp"

type bucketKey struct {
	key   string
	class Route
}

// NewLimiter returns a limiter allowing perMinute requests per minute and
// class to a key that does not set its own limit.
func NewLimiter(perMinute int) *Limiter {
	return &Limiter{perMinute: perMinute, buckets: map[bucketKey]*rate.Limiter{}}
}

// Allow takes one request from p's bucket of class. When the bucket is
// empty it returns false and how long until a request would be allowed.
func (l *Limiter) Allow(p *Principal, class Route, now time.Time) (bool, time.Duration) {
	n := p.RateLimitPerMinute
	if n <= 0 {
		n = l.perMinute
	}
	l.mu.Lock()
	k := bucketKey{p.KeyID, class}
	b, ok := l.buckets[k]
	if !ok {
		b = rate.NewLimiter(rate.Limit(float64(n)/60), n)
		l.buckets[k] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if !r.OK() {
		return false, time.Minute
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request does not use up the bucket
		return false, d
	}
	return true, 0
}
