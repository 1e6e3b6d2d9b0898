package main

import (
	"context"
	"log/slog"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/gctune"
)

// tuneGC bounds the collector's headroom (H4R_GC_HEADROOM_MB) for the
// commands that run the service: serve, mcp and bench latency, whose
// resident set is what the speed targets measure. It returns the function
// that restores the process's GOGC.
func tuneGC(ctx context.Context, cfg config.Config, log *slog.Logger) (stop func()) {
	return gctune.Start(ctx, uint64(cfg.GCHeadroomMB)<<20, gctune.WithLogger(log))
}
