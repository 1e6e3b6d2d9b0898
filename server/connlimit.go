package server

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/h4r/h4r"
)

// Defaults of the limits on clients that have not authenticated.
const (
	// DefaultMaxConnectionsPerAddr is the default cap on the connections
	// of one remote address: a quarter of DefaultMaxConnections, so that
	// one address holding its connections open (slowloris) leaves the
	// rest to everyone else.
	DefaultMaxConnectionsPerAddr = DefaultMaxConnections / 4
	// DefaultUnauthenticatedBytes bounds the bytes of request bodies read
	// before they are authenticated (webhook deliveries, checked by their
	// signature over the whole body): room for two of GitHub's largest
	// deliveries (MaxWebhookBytes) at once, and no more memory than that
	// for bodies nobody has vouched for.
	DefaultUnauthenticatedBytes = 64 << 20
	// unauthChunk is the grain in which such a body takes its bytes.
	unauthChunk = 32 << 10
	// unauthWait is how long a body waits for room before it is refused.
	unauthWait = time.Second
)

// WithMaxConnectionsPerAddr caps the connections Listener serves at once
// from one remote address (default DefaultMaxConnectionsPerAddr); one more
// is answered 503 unavailable with Retry-After and closed. n <= 0 removes
// the cap (behind a reverse proxy, whose one address carries every
// client).
func WithMaxConnectionsPerAddr(n int) Option {
	return func(s *Server) { s.limits.maxConnsPerAddr = max(n, 0) }
}

// WithUnauthenticatedBytes bounds the bytes of request bodies read before
// they are authenticated, all requests together (default
// DefaultUnauthenticatedBytes); n <= 0 removes the bound.
func WithUnauthenticatedBytes(n int64) Option {
	return func(s *Server) { s.limits.unauthBytes = newBytesInFlight(n) }
}

// addrConns counts the open connections of each remote address.
type addrConns struct {
	max  int // 0: no cap
	mu   sync.Mutex
	open map[string]int
}

func newAddrConns(n int) *addrConns { return &addrConns{max: n, open: map[string]int{}} }

// take counts a connection of addr, or reports false when addr holds its
// cap already.
func (a *addrConns) take(addr string) bool {
	if a.max <= 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open[addr] >= a.max {
		return false
	}
	a.open[addr]++
	return true
}

func (a *addrConns) release(addr string) {
	if a.max <= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.open[addr] <= 1 {
		delete(a.open, addr) // the map holds only addresses connected now
		return
	}
	a.open[addr]--
}

// remoteHost is the host of a connection's remote address (its port left
// out: each connection of a client has its own).
func remoteHost(c net.Conn) string {
	addr := c.RemoteAddr()
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// bytesInFlight bounds the bytes of unauthenticated bodies held at once.
// A nil *bytesInFlight bounds nothing.
type bytesInFlight struct {
	sem *semaphore.Weighted
	max int64
}

func newBytesInFlight(n int64) *bytesInFlight {
	if n <= 0 {
		return nil
	}
	return &bytesInFlight{sem: semaphore.NewWeighted(n), max: n}
}

// readAll reads r to its end, taking room for what it reads as it reads
// it, so that bodies nobody has authenticated yet never hold more than the
// bound between them. release gives the room back; call it once the body
// is no longer held (on error readAll has given it back). When there is no
// room within unauthWait, the body is refused unavailable (503, Retry-After).
func (b *bytesInFlight) readAll(ctx context.Context, r io.Reader) (body []byte, release func(), err error) {
	if b == nil {
		body, err = io.ReadAll(r)
		return body, func() {}, err
	}
	var held int64
	release = func() {
		if held > 0 {
			b.sem.Release(held)
			held = 0
		}
	}
	buf := make([]byte, 0, unauthChunk)
	for {
		if err := b.take(ctx, unauthChunk); err != nil {
			release()
			return nil, nil, err
		}
		held += unauthChunk
		if cap(buf)-len(buf) < unauthChunk {
			buf = append(buf, make([]byte, unauthChunk)...)[:len(buf)]
		}
		n, rerr := io.ReadFull(r, buf[len(buf):len(buf)+unauthChunk])
		buf = buf[:len(buf)+n]
		if unused := int64(unauthChunk - n); unused > 0 {
			b.sem.Release(unused)
			held -= unused
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			return buf, release, nil
		}
		if rerr != nil {
			release()
			return nil, nil, rerr
		}
	}
}

func (b *bytesInFlight) take(ctx context.Context, n int64) error {
	if b.sem.TryAcquire(n) {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, unauthWait)
	defer cancel()
	if err := b.sem.Acquire(wctx, n); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "the server is reading its limit of %d bytes of request bodies not yet authenticated; retry after a pause", b.max)
	}
	return nil
}
