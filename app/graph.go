package app

import (
	"context"
	"fmt"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/sources"
)

// graphGenerator returns the causal-hop generator: the store's recursive CTE,
// or Neo4j when NEO4J_URL is set.
func graphGenerator(ctx context.Context, cfg config.Config, a *App, o options) (sources.Generator, error) {
	if cfg.Neo4jURL != "" {
		return nil, notBuiltYet("NEO4J_URL", "the Neo4j hop generator")
	}
	return a.Store.Graph(), nil
}

// RebuildGraph rebuilds the graph mirror from the store (h4r reindex
// --graph). Without NEO4J_URL the graph is the store's own links table and
// there is nothing to rebuild.
func RebuildGraph(ctx context.Context, a *App) error {
	return fmt.Errorf("NEO4J_URL is not set: the causal graph is the store's links table, there is nothing to rebuild")
}
