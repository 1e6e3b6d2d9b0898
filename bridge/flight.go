package bridge

import (
	"context"
	"sync"
)

// flight runs one read per key at a time for every call that wants it.
// Each call waits under its own context: the read runs under a context of
// its own, cancelled only once every call waiting for it has gone, so that
// a call that joined a read is never failed by the deadline or the
// cancellation of the call that started it.
type flight struct {
	mu    sync.Mutex
	calls map[string]*flightCall
}

// flightCall is one read and the calls waiting for it.
type flightCall struct {
	done    chan struct{} // closed when ans is set
	ans     answer
	waiters int
	cancel  context.CancelFunc
}

// answer is what a read gave: the block, the version each match was read
// at (beside blk.Matches; 0 unknown), and whether it may be cached.
type answer struct {
	blk      *Block
	versions []int
	err      error
}

// join returns the read of key in flight, counting the caller as waiting
// for it, or starts one: then start is true and the caller must run the
// read under ctx (which only the waiters' leaving cancels) and end it with
// finish.
func (f *flight) join(parent context.Context, key string) (c *flightCall, ctx context.Context, start bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.calls[key]; ok {
		c.waiters++
		return c, nil, false
	}
	if f.calls == nil {
		f.calls = map[string]*flightCall{}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	c = &flightCall{done: make(chan struct{}), waiters: 1, cancel: cancel}
	f.calls[key] = c
	return c, ctx, true
}

// leave says a caller no longer waits for c. The last to leave before the
// read ends cancels it, and a later call starts a read of its own.
func (f *flight) leave(key string, c *flightCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.waiters--; c.waiters > 0 {
		return
	}
	select {
	case <-c.done:
	default:
		c.cancel()
		if f.calls[key] == c {
			delete(f.calls, key)
		}
	}
}

// finish records the read's answer and wakes its waiters.
func (f *flight) finish(key string, c *flightCall, a answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls[key] == c {
		delete(f.calls, key)
	}
	c.ans = a
	close(c.done)
	c.cancel()
}
