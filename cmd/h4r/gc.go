package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/gctune"
)

// tuneGC gives the collector a fixed headroom (H4R_GC_HEADROOM_MB) for
// the commands that run the service: serve, mcp and bench latency, whose
// resident set and latency are what the speed targets measure. Unless the
// user set GOGC, which then bounds it, GOGC may go up to
// gctune.DefaultCeiling: a small corpus's heap is then collected after the
// headroom too, not after its own size. Under the context bridge's load
// collection was a visible share of the server's CPU and of its p99; the
// headroom trades some resident memory for both (internal/gctune). It
// returns the function that restores the process's
// GOGC.
func tuneGC(ctx context.Context, cfg config.Config, log *slog.Logger) (stop func()) {
	opts := []gctune.Option{gctune.WithLogger(log)}
	if os.Getenv("GOGC") == "" {
		opts = append(opts, gctune.WithCeiling(gctune.DefaultCeiling))
	}
	return gctune.Start(ctx, uint64(cfg.GCHeadroomMB)<<20, opts...)
}
