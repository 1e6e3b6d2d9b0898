package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"
)

// cmdHealth asks a running server whether it is live (or ready), for
// container health checks: an image built FROM scratch has no curl.
func cmdHealth(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	addr := "127.0.0.1:8080"
	if v, ok := lookupEnv("H4R_ADDR"); ok && v != "" {
		addr = v
	}
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, "health [--addr HOST:PORT] [--ready]   exit 0 when the server answers /health/live (or /health/ready) with 200")
	fs.StringVar(&addr, "addr", addr, "the server's address (H4R_ADDR)")
	ready := fs.Bool("ready", false, "ask /health/ready (every backend reachable) instead of /health/live")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path := "/health/live"
	if *ready {
		path = "/health/ready"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+healthHost(addr)+path, nil)
	if err != nil {
		return usageError{fmt.Sprintf("--addr %q: %v", addr, err)}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %s", path, resp.StatusCode, body)
	}
	fmt.Fprintf(stdout, "%s\n", body)
	return nil
}

// healthHost turns a listen address into one to dial: a server listening
// on all interfaces (0.0.0.0:8080, :8080) is asked on loopback.
func healthHost(addr string) string {
	switch {
	case len(addr) > 0 && addr[0] == ':':
		return "127.0.0.1" + addr
	case len(addr) > 8 && addr[:8] == "0.0.0.0:":
		return "127.0.0.1" + addr[7:]
	case len(addr) > 5 && addr[:5] == "[::]:":
		return "127.0.0.1" + addr[4:]
	}
	return addr
}
