package app

import (
	"context"

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
