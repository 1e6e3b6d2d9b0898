package app

import (
	"context"
	"fmt"

	"github.com/h4r/h4r/config"
	ranker "github.com/h4r/h4r/h4r"
	"github.com/h4r/h4r/sources"
)

// textGenerators returns the relevance generators (full-text, and vectors
// when built) and how their scores fuse into the relevance signal.
func textGenerators(ctx context.Context, cfg config.Config, a *App, o options) ([]sources.Generator, ranker.Fusion, error) {
	if cfg.QdrantURL != "" {
		return nil, ranker.Fusion{}, notBuiltYet("QDRANT_URL", "the Qdrant vector generator")
	}
	return []sources.Generator{a.Store.FullText()}, ranker.Fusion{Method: cfg.Fusion}, nil
}

// RebuildVectors rebuilds the vector index from the store (h4r reindex).
func RebuildVectors(ctx context.Context, a *App) error {
	return fmt.Errorf("vector candidates are not part of this version yet: there is no vector index to rebuild")
}
