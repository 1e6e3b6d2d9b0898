package app

import (
	"context"
	"fmt"

	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

// openStore opens the store the configuration selects: Postgres when
// DATABASE_URL is set (its migrations applied at start; reads and writes in
// pools of their own), else the embedded SQLite file. Either bounds each
// write by H4R_WRITE_TIMEOUT.
func openStore(ctx context.Context, cfg config.Config, counter *tokens.Counter, o options) (Store, error) {
	stop, err := analysis.StopList(cfg.StopWords)
	if err != nil {
		return nil, fmt.Errorf("loading the stop words (H4R_STOP_WORDS): %w", err)
	}
	if cfg.DatabaseURL != "" {
		store, err := postgres.Open(ctx, cfg.DatabaseURL, postgres.WithStopWords(stop),
			postgres.WithTokenCounter(counter), postgres.WithLogger(o.log), postgres.WithClock(o.now),
			postgres.WithMaxReadConns(cfg.PGMaxReadConns), postgres.WithMaxWriteConns(cfg.PGMaxWriteConns),
			postgres.WithWriteTimeout(cfg.WriteTimeout), postgres.WithVectorANNThreshold(cfg.VectorANNThreshold),
			postgres.WithItemCacheBytes(int64(cfg.ItemCacheMB)<<20))
		if err != nil {
			return nil, fmt.Errorf("opening the Postgres store (DATABASE_URL): %w", err)
		}
		return store, nil
	}
	path := cfg.SQLitePath()
	store, err := sqlite.Open(ctx, path, sqlite.WithStopWords(stop), sqlite.WithTokenCounter(counter), sqlite.WithLogger(o.log), sqlite.WithClock(o.now),
		sqlite.WithWriteTimeout(cfg.WriteTimeout), sqlite.WithItemCacheBytes(int64(cfg.ItemCacheMB)<<20),
		sqlite.WithVectorANNThreshold(cfg.VectorANNThreshold), sqlite.WithSync(cfg.SQLiteSync))
	if err != nil {
		return nil, fmt.Errorf("opening the embedded store %s: %w", path, err)
	}
	return store, nil
}
