package app

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
)

// warming tracks the in-memory indexes being built in the background after
// Open (full text, link graph, vectors). Until each has been built once,
// /health/ready answers 503 naming them: at a million items building takes
// minutes, and a replica that took traffic meanwhile would answer its
// first packs late or degraded.
type warming struct {
	mu      sync.Mutex
	pending []string
	// ready are the checks of warmers that never return (Postgres: they
	// load, then follow other replicas until Close), by name.
	ready map[string]func(context.Context) error
}

// check is the readiness check: an error naming what is still being built.
func (w *warming) check(ctx context.Context) error {
	pending := w.loading(ctx)
	if len(pending) == 0 {
		return nil
	}
	return fmt.Errorf("still loading the in-memory %s", strings.Join(pending, ", "))
}

// loading names the indexes still being built; the engine names them in
// the answer to a pack that could not wait for them (engine.WithLoading).
func (w *warming) loading(ctx context.Context) []string {
	w.mu.Lock()
	pending := slices.Clone(w.pending)
	ready := w.ready
	w.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(ready)) {
		if ready[name](ctx) != nil {
			pending = append(pending, name)
		}
	}
	return pending
}

// warmInBackground runs build in a goroutine; Close cancels it and waits for
// it. The index counts as loading under name until build returns or, when
// the store says so itself (a Ready method of the warmer's store), until
// that says it is loaded. A failure is logged and no longer holds
// readiness: the first search retries it.
func (a *App) warmInBackground(name string, build func(context.Context) error, log *slog.Logger, failed string) {
	a.warmUntil(name, build, nil, log, failed)
}

// warmUntil is warmInBackground for a warmer that never returns: ready
// says when its first load is done.
func (a *App) warmUntil(name string, build, ready func(context.Context) error, log *slog.Logger, failed string) {
	w := &a.warming
	w.mu.Lock()
	if ready != nil {
		if w.ready == nil {
			w.ready = map[string]func(context.Context) error{}
		}
		w.ready[name] = ready
	} else {
		w.pending = append(w.pending, name)
	}
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			w.mu.Lock()
			if i := slices.Index(w.pending, name); i >= 0 {
				w.pending = slices.Delete(w.pending, i, i+1)
			}
			last := len(w.pending) == 0 && ctx.Err() == nil
			w.mu.Unlock()
			if last {
				returnLoadingGarbage()
			}
		}()
		if err := build(ctx); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, failed, "error", err)
		}
	}()
	a.closers = append(a.closers, func() error {
		cancel()
		<-done
		return nil
	})
}

// returnLoadingGarbage hands the memory that building the indexes
// allocated and did not keep (rows read, texts analysed, vectors decoded)
// back to the system when it is worth it (worthReturning): the runtime
// would hand it back only slowly, and the process would stay at its
// loading peak for minutes.
func returnLoadingGarbage() {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/heap/goal:bytes"},
	}
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			return
		}
	}
	retained := s[0].Value.Uint64() + s[1].Value.Uint64() + s[2].Value.Uint64()
	if worthReturning(retained, s[3].Value.Uint64(), s[4].Value.Uint64()) {
		debug.FreeOSMemory()
	}
}

// worthReturning says whether to collect and hand the heap's free memory
// back to the system, given the heap the process holds (retained), the
// live heap at the last collection and the size the heap may grow to
// before the next one (goal). Every cycle the heap grows from live to
// goal again: memory handed back below the goal is faulted back in page
// by page under the first requests, lengthening their tail for no
// lasting saving. So the heap is collected and handed back only when what
// stays returned (retained above goal) is at least what is regrown. A
// small store's loading leaves the heap about its goal, and it is left
// alone; a large one's leaves it many times its goal.
func worthReturning(retained, live, goal uint64) bool {
	if retained <= goal {
		return false
	}
	var regrown uint64
	if goal > live {
		regrown = goal - live
	}
	return retained-goal >= regrown
}
