package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/scs"
)

// indexTrajectories makes the context bridge's signature index a mirror
// of the store when the bridge is on: every write's ids are re-read and
// trajectories (re)indexed, so a cache miss is a lookup in memory
// (bridge.IndexSource) rather than a pack. With the bridge off nothing is
// kept and writes pay nothing.
func indexTrajectories(a *App, cfg config.Config) {
	if !cfg.BridgeEnabled {
		return
	}
	a.trajectories = bridge.NewIndex(bridge.TechExtractor{})
	a.mirrors = append(a.mirrors, storeMirror{name: "bridge-index", sync: func(ctx context.Context, ids []string) error {
		return a.trajectories.Sync(ctx, a.base, ids)
	}})
}

// Bridge returns the context bridge (document 001) configured by the
// H4R_BRIDGE_* variables. A cache miss looks the call up in the signature
// index and passes the best trajectories through the policy slicer and
// the default budgets; until the index has loaded (in the background,
// then again every H4R_BRIDGE_INDEX_REFRESH) it reads them with a pack
// through the engine. Similarity is hybrid when an embedding server is
// configured (H4R_EMBEDDER=openai); the built-in hashing embedder is
// lexical, so with it matching is concept-only.
func (a *App) Bridge(log *slog.Logger) (*bridge.Bridge, error) {
	c := a.Config
	cfg := bridge.Config{Enabled: c.BridgeEnabled, MinSimilarity: c.BridgeMinSimilarity, MaxMatches: c.BridgeMaxMatches,
		CacheSize: c.BridgeCacheSize, Timeout: c.BridgeTimeout, EmbedTimeout: c.BridgeEmbedTimeout}
	for _, t := range strings.Split(c.BridgeTools, ",") {
		if t = strings.TrimSpace(t); t != "" {
			cfg.Tools = append(cfg.Tools, t)
		}
	}
	opts := []bridge.Option{bridge.WithLogger(log)}
	if c.Embedder == "openai" {
		_, queries, err := embedders(c, log)
		if err != nil {
			return nil, fmt.Errorf("the context bridge's embedder: %w", err)
		}
		opts = append(opts, bridge.WithEmbedder(queries))
	}
	var source bridge.Source = bridge.EngineSource{Packer: a.Engine}
	if a.trajectories != nil {
		idx := bridge.IndexSource{Index: a.trajectories, Slicer: a.Slicer, Fallback: source,
			Budget: scs.Limits{MaxBytes: c.MaxBytesDefault, MaxTokens: c.MaxTokensDefault}}
		if c.Embedder != "openai" {
			idx.Floor = c.BridgeMinSimilarity // concept-only: nothing below can match
		}
		source = idx
		a.refreshTrajectories(log)
	}
	return bridge.New(cfg, source, opts...)
}

// refreshTrajectories loads the signature index now and then every
// H4R_BRIDGE_INDEX_REFRESH in the background, until Close.
func (a *App) refreshTrajectories(log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(a.Config.BridgeIndexRefresh)
		defer tick.Stop()
		for {
			if err := a.trajectories.Load(ctx, a.base); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "context bridge: loading the trajectory index failed; misses read through the engine until it loads", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	a.closers = append(a.closers, func() error {
		cancel()
		<-done
		return nil
	})
}
