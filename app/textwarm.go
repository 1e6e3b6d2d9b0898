package app

import (
	"context"
	"log/slog"
)

// fullTextWarmer is a store that keeps a full-text index in memory
// (store/sqlite.Store: built from the file at open, never persisted).
type fullTextWarmer interface {
	WarmFullText(ctx context.Context) error
}

// warmFullText builds the store's full-text index in the background, when
// it keeps one, so that the first full-text searches do not wait for it;
// Close waits for it to stop. Searches that arrive before it is done wait
// (under their generator deadline) rather than build a second copy.
func warmFullText(a *App, store Store, log *slog.Logger) {
	w, ok := store.(fullTextWarmer)
	if !ok {
		return
	}
	a.warmInBackground("full-text index", w.WarmFullText, log, "building the full-text index failed; the first full-text search will retry")
}
