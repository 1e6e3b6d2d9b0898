package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/server"
)

// shutdownGrace is how long in-flight requests may finish after SIGTERM.
const shutdownGrace = 10 * time.Second

// cmdServe runs the HTTP API until ctx is cancelled. ready, when not nil,
// receives the bound address once the server accepts connections (tests
// listen on port 0).
func cmdServe(ctx context.Context, args []string, stderr io.Writer, lookupEnv func(string) (string, bool), ready chan<- string) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address HOST:PORT (H4R_ADDR)")
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	fs.StringVar(&cfg.PolicyDir, "policy-dir", cfg.PolicyDir, "directory of Rego policy files replacing the bundled policy (SCS_POLICY_DIR)")
	withDemo := fs.Bool("demo", false, "load the bundled example corpus when the store is empty")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("serve takes no arguments, got %q", fs.Args())}
	}
	log := cfg.Logger(stderr)

	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return fmt.Errorf("H4R_ADDR/--addr %q: %w", cfg.Addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--addr %s is not a loopback address: this version has no authentication, so it only serves on 127.0.0.1, ::1 or localhost", cfg.Addr)
	}

	a, err := app.Open(ctx, cfg, app.WithLogger(log))
	if err != nil {
		return err
	}
	defer func() {
		if err := a.Close(); err != nil {
			log.Error("closing the store", "error", err)
		}
	}()
	if *withDemo {
		n, err := demo.LoadIfEmpty(ctx, a.Store)
		if err != nil {
			return fmt.Errorf("loading the demo corpus: %w", err)
		}
		if n > 0 {
			log.Info("loaded the demo corpus", "items", n)
		}
	}

	srv := &http.Server{
		Handler: server.New(a.Engine, a.Store,
			server.WithMaxBodyBytes(cfg.MaxBodyBytes),
			server.WithRequestTimeout(cfg.RequestTimeout),
			server.WithLogger(log),
		).Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Addr, err)
	}
	log.Info("h4r serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir,
		"policy", a.Policy.Source(), "policy_revision", a.Policy.Revision(),
		"note", "no authentication in this version: serving on loopback only")
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}
