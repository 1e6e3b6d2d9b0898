package app

import (
	"context"
	"log/slog"
)

// graphWarmer is a store that keeps its link graph in memory for hops
// (store/sqlite.Store, which loads it and returns; store/postgres.Store,
// which loads it, then follows other replicas' writes until ctx ends).
type graphWarmer interface {
	WarmGraph(ctx context.Context) error
}

// warmGraph loads the store's link graph into memory in the background,
// when it keeps one, so that the first hop queries do not wait for it;
// Close waits for it to stop. On SQLite, hops that arrive before it is done
// wait (under their generator deadline) rather than load a second copy; on
// Postgres they are answered by frontier queries meanwhile.
func warmGraph(a *App, store Store, log *slog.Logger) {
	gw, ok := store.(graphWarmer)
	for !ok { // under the mirrors' wrappers
		u, wrapped := store.(interface{ Unwrap() Store })
		if !wrapped {
			return
		}
		store = u.Unwrap()
		gw, ok = store.(graphWarmer)
	}
	var ready func(context.Context) error
	if r, ok := gw.(interface{ GraphReady(context.Context) error }); ok {
		ready = r.GraphReady // Postgres: WarmGraph follows other replicas until Close
	}
	a.warmUntil("link graph", gw.WarmGraph, ready, log, "loading the link graph failed; the first hop query will retry")
}
