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

// RouteWSMessage is the rate-limit bucket of the messages a key sends on
// its WebSocket subscriptions (GET /v1/subscribe): opening the socket is
// one read request, and each message after it is counted here, so that a
// socket is not a way around the limit.
const RouteWSMessage Route = "ws-message"

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
	return l.AllowN(p, class, now, 1)
}

// PerMinute is p's limit per minute and class: its own, or the default.
func (l *Limiter) PerMinute(p *Principal) int {
	if p.RateLimitPerMinute > 0 {
		return p.RateLimitPerMinute
	}
	return l.perMinute
}

// AllowN takes count requests at once from p's bucket of class (the calls
// of a JSON-RPC batch), all or none. When they are not all allowed it
// returns false and how long until they would be; a count over the
// bucket's size is never allowed (false, a minute).
func (l *Limiter) AllowN(p *Principal, class Route, now time.Time, count int) (bool, time.Duration) {
	if count <= 0 {
		return true, 0
	}
	n := l.PerMinute(p)
	l.mu.Lock()
	k := bucketKey{p.KeyID, class}
	b, ok := l.buckets[k]
	if !ok {
		b = rate.NewLimiter(rate.Limit(float64(n)/60), n)
		l.buckets[k] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, count)
	if !r.OK() {
		return false, time.Minute
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now) // a refused request does not use up the bucket
		return false, d
	}
	return true, 0
}
