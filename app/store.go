package app

import (
	"context"
	"fmt"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/sources/sqlite"
	"github.com/h4r/h4r/tokens"
)

// openStore opens the store the configuration selects: the embedded SQLite
// file, or Postgres when DATABASE_URL is set.
func openStore(ctx context.Context, cfg config.Config, counter *tokens.Counter, o options) (Store, error) {
	if cfg.DatabaseURL != "" {
		return nil, notBuiltYet("DATABASE_URL", "the Postgres store")
	}
	path := cfg.SQLitePath()
	store, err := sqlite.Open(ctx, path, sqlite.WithTokenCounter(counter), sqlite.WithLogger(o.log), sqlite.WithClock(o.now))
	if err != nil {
		return nil, fmt.Errorf("opening the embedded store %s: %w", path, err)
	}
	return store, nil
}
