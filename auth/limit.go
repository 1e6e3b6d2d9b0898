package auth

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per key: a key with a limit of n per minute may
// burst n requests, then one every 60/n seconds. Buckets exist only for keys
// in the keys file, so their number is bounded.
type Limiter struct {
	perMinute int // the default for keys without their own limit
	mu        sync.Mutex
	buckets   map[string]*rate.Limiter
}

// NewLimiter returns a limiter allowing perMinute requests per minute to a
// key that does not set its own limit.
func NewLimiter(perMinute int) *Limiter {
	return &Limiter{perMinute: perMinute, buckets: map[string]*rate.Limiter{}}
}

// Allow takes one request from p's bucket. When the bucket is empty it
// returns false and how long until a request would be allowed.
func (l *Limiter) Allow(p *Principal, now time.Time) (bool, time.Duration) {
	n := p.RateLimitPerMinute
	if n <= 0 {
		n = l.perMinute
	}
	l.mu.Lock()
	b, ok := l.buckets[p.KeyID]
	if !ok {
		b = rate.NewLimiter(rate.Limit(float64(n)/60), n)
		l.buckets[p.KeyID] = b
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
