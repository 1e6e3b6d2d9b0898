package engine

import (
	"sync/atomic"
	"time"
)

// workerLinger is how long a worker waits for more work before it ends.
const workerLinger = 5 * time.Second

// workers runs a pack's concurrent stages (the build, each generator) on
// goroutines that outlive them for a while. A new goroutine starts with a
// small stack, which the generators' SQLite and index code grow by
// copying, a few per cent of a pack's CPU under load
// (bench/results/2026-11-30/pack-cpu-5.md); a worker keeps the stack an
// earlier pack grew. Workers are made as needed, never
// waited for, and end after workerLinger idle, so there is no bound or
// queue here: the engine's slots bound the packs in flight.
type workers struct {
	idle    chan func()  // unbuffered: a send succeeds only when a worker waits
	started atomic.Int64 // workers started so far
}

func newWorkers() *workers { return &workers{idle: make(chan func())} }

// Go runs f on a waiting worker, or on a new one when none waits. A nil
// *workers starts a plain goroutine.
func (w *workers) Go(f func()) {
	if w == nil {
		go f()
		return
	}
	select {
	case w.idle <- f:
	default:
		w.started.Add(1)
		go w.run(f)
	}
}

func (w *workers) run(f func()) {
	t := time.NewTimer(workerLinger)
	defer t.Stop()
	for {
		f()
		f = nil // what the last stage held is not kept while waiting
		t.Reset(workerLinger)
		select {
		case f = <-w.idle:
		case <-t.C:
			return
		}
	}
}
