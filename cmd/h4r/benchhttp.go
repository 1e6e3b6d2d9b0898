package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/metrics"
)

// serveBench serves a's HTTP API on a loopback port, as h4r serve builds
// it without keys, so that a benchmark asks its queries through the public
// API. Anonymous callers may audit (the pack ranks every candidate, as the
// in-process run's does). It returns the base URL and the function that
// stops the server.
func serveBench(cfg config.Config, a *app.App, log *slog.Logger) (string, func(), error) {
	cfg.AnonymousAudit = true
	api := apiServer(cfg, a, nil, false, log, metrics.New(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listening for the benchmark's API: %w", err)
	}
	srv := &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("the benchmark's API server stopped", "error", err)
		}
	}
	return "http://" + ln.Addr().String(), stop, nil
}
