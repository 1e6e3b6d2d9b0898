package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugHandler serves Go's runtime profiles under /debug/pprof/, on a mux
// of its own: net/http/pprof also registers them on http.DefaultServeMux,
// which nothing in h4r serves.
func debugHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // and every named profile under it
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// startDebug serves debugHandler on addr (H4R_DEBUG_ADDR, which config
// has checked is loopback) until ctx ends or stop is called, and returns
// the bound address. A CPU profile or trace runs for the seconds its
// caller asks, so the listener has no write deadline.
func startDebug(ctx context.Context, addr string, log *slog.Logger) (bound string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listening on H4R_DEBUG_ADDR %s: %w", addr, err)
	}
	srv := &http.Server{Handler: debugHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the profiling listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	stopped := context.AfterFunc(ctx, func() { _ = srv.Close() })
	log.Info("serving Go's runtime profiles", "addr", ln.Addr().String(), "path", "/debug/pprof/")
	return ln.Addr().String(), func() {
		stopped()
		_ = srv.Close()
		<-done
	}, nil
}
