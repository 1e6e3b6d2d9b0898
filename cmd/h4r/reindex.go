package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/h4r/h4r/app"
)

// cmdReindex rebuilds the vector index from the store, the source of truth:
// the embedded store's vectors, or the Qdrant collection when QDRANT_URL is
// set. Run it after changing the embedder (H4R_EMBEDDER, H4R_EMBED_MODEL,
// H4R_EMBED_DIM), after ingesting while the embeddings server was down, or
// when Qdrant lost writes. With --graph it also rebuilds the Neo4j graph.
func cmdReindex(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("reindex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `reindex [flags]`)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	graph := fs.Bool("graph", false, "also rebuild the Neo4j graph from the store (NEO4J_URL)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{fmt.Sprintf("reindex takes no arguments, got %q", pos)}
	}
	a, err := openApp(ctx, cfg, app.WithLogger(cfg.Logger(stderr)))
	if err != nil {
		return err
	}
	defer a.Close()
	total, err := a.Store.Count(ctx)
	if err != nil {
		return err
	}
	n, err := app.RebuildVectors(ctx, a, func(done int) { fmt.Fprintf(stderr, "\rembedded %d/%d items", done, total) })
	if n > 0 {
		fmt.Fprintln(stderr)
	}
	if err != nil {
		return fmt.Errorf("rebuilding the vector index (%d items done): %w", n, err)
	}
	target := "the embedded store"
	if cfg.QdrantURL != "" {
		target = fmt.Sprintf("Qdrant collection %s", cfg.QdrantCollection)
	}
	fmt.Fprintf(stdout, "reindexed %d items into %s\n", n, target)
	if *graph {
		if err := app.RebuildGraph(ctx, a); err != nil {
			return fmt.Errorf("rebuilding the graph: %w", err)
		}
		fmt.Fprintln(stdout, "rebuilt the graph from the store")
	}
	return nil
}
