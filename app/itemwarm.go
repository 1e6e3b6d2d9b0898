package app

import (
	"context"
	"log/slog"

	"github.com/h4r/h4r/index/itemcache"
)

// itemWarmer is a store that keeps a cache of decoded items
// (store/sqlite.Store), which it can fill from the file.
type itemWarmer interface {
	WarmItems(ctx context.Context) error
}

// warmItems fills the store's item cache in the background, when it keeps
// one, so that the first packs do not read and decode their hits from the
// file; Close waits for it to stop. Packs and writes go on meanwhile: the
// fill reads as a search does, and keeps only what the cache's generation
// allows.
func warmItems(a *App, store Store, log *slog.Logger) {
	w, ok := store.(itemWarmer)
	if !ok {
		return
	}
	a.warmInBackground("item cache", w.WarmItems, log, "filling the item cache failed; searches read their hits from the file meanwhile")
}

// itemCacheReporter is a store that keeps a cache of decoded items and
// counts its use (both stores do).
type itemCacheReporter interface {
	ItemCacheStats() itemcache.Stats
}

// ItemCacheStats returns the figures of the store's item cache (what it
// holds, how often reads found their items in it), and false when the
// store keeps none.
func (a *App) ItemCacheStats() (itemcache.Stats, bool) {
	r, ok := a.base.(itemCacheReporter)
	if !ok {
		return itemcache.Stats{}, false
	}
	return r.ItemCacheStats(), true
}
