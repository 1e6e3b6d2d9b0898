package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/store/neo4j"
)

// graphCloseTimeout bounds the last retry of pending mirror writes, and
// the pool's close, at shutdown.
const graphCloseTimeout = 10 * time.Second

// graphGenerator returns the causal-hop generator: the store's walk, or
// Neo4j when NEO4J_URL is set. With Neo4j, the store is wrapped so
// that every write is mirrored into the graph, a background loop retries
// mirror writes that failed, and the store answers whenever Neo4j fails or is
// late (a warning in the pack, not a failed request).
func graphGenerator(ctx context.Context, cfg config.Config, a *App, o options) (h4r.Generator, error) {
	warmGraph(a, a.base, o.log) // the store walks, or answers when Neo4j cannot
	if cfg.Neo4jURL == "" {
		return a.base.Graph(), nil
	}
	client, err := neo4j.Open(ctx, cfg.Neo4jURL, neo4j.WithAuth(cfg.Neo4jUser, cfg.Neo4jPassword),
		neo4j.WithDatabase(cfg.Neo4jDatabase), neo4j.WithLogger(o.log))
	if err != nil {
		return nil, fmt.Errorf("NEO4J_URL: %w", err)
	}
	a.Checks["neo4j"] = client.Ping
	store := a.base
	mirror := neo4j.NewMirror(client, store, neo4j.WithLogger(o.log))
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		mirror.Run(runCtx)
	}()
	a.closers = append(a.closers, func() error {
		stop()
		<-done
		cctx, cancel := context.WithTimeout(context.Background(), graphCloseTimeout)
		defer cancel()
		var errs []error
		if len(mirror.Pending()) > 0 {
			if err := mirror.Retry(cctx); err != nil {
				errs = append(errs, fmt.Errorf("neo4j mirror writes lost at shutdown (the store has the items; run h4r reindex --graph): %w", err))
			}
		}
		return errors.Join(append(errs, client.Close(cctx))...)
	})
	checkGraphMirror(ctx, client, store, o.log)
	a.graphMirror = mirror
	a.mirrors = append(a.mirrors, storeMirror{name: "neo4j", sync: func(ctx context.Context, ids []string) error {
		mirror.Changed(ctx, ids...) // it logs and retries failures itself
		return nil
	}})
	return neo4j.NewGenerator(client, store, store.Graph(), neo4j.WithLogger(o.log)), nil
}

// checkGraphMirror warns at start when the graph does not hold as many
// items as the store: writes made while Neo4j was unreachable, or before
// NEO4J_URL was set, are not in it until a rebuild.
func checkGraphMirror(ctx context.Context, client *neo4j.Client, store Store, log *slog.Logger) {
	inGraph, err := client.Count(ctx)
	if err != nil {
		log.WarnContext(ctx, "could not count the items of the neo4j graph", "error", err)
		return
	}
	inStore, err := store.Count(ctx)
	if err != nil {
		log.WarnContext(ctx, "could not count the items of the store", "error", err)
		return
	}
	if inGraph != inStore {
		log.WarnContext(ctx, "the neo4j graph is not in step with the store: run h4r reindex --graph",
			"graph_items", inGraph, "store_items", inStore)
	}
}

// RebuildGraph rebuilds the Neo4j graph from the store (h4r reindex
// --graph): it clears the graph and mirrors every item again. Without
// NEO4J_URL the graph is the store's own links table and there is nothing
// to rebuild. Hops answered while it runs see a partial graph.
func RebuildGraph(ctx context.Context, a *App) error {
	if a.Config.Neo4jURL == "" {
		return errors.New("NEO4J_URL is not set: the causal graph is the store's links table, there is nothing to rebuild")
	}
	if a.graphMirror != nil {
		if _, err := a.graphMirror.Rebuild(ctx); err != nil {
			return fmt.Errorf("rebuilding the neo4j graph: %w", err)
		}
		return nil
	}
	return errors.New("the store is not mirrored into neo4j: open the app with NEO4J_URL set")
}
