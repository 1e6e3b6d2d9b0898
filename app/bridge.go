package app

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/h4r/h4r/bridge"
)

// Bridge returns the context bridge (document 001) configured by the
// H4R_BRIDGE_* variables, reading trajectories through the engine (and so
// the policy slicer). Similarity is hybrid when an embedding server is
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
	return bridge.New(cfg, bridge.EngineSource{Packer: a.Engine}, opts...)
}
