package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestWarmUpHoldsReadiness: readiness names each in-memory index still
// being built, and clears once its warmer returns (or, for a warmer that
// follows other replicas and never returns, once the store says it is
// loaded); a warmer that fails no longer holds it.
func TestWarmUpHoldsReadiness(t *testing.T) {
	a := &App{}
	defer a.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	release := make(chan struct{})
	a.warmInBackground("full-text index", func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}, log, "failed")
	a.warmInBackground("link graph", func(context.Context) error { return errors.New("disk gone") }, log, "failed")
	loaded := make(chan struct{})
	a.warmUntil("vector index", func(ctx context.Context) error { <-ctx.Done(); return nil }, func(context.Context) error {
		select {
		case <-loaded:
			return nil
		default:
			return errors.New("loading")
		}
	}, log, "failed")

	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := a.warming.check(t.Context())
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("readiness %q, want %q", got, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("still loading the in-memory full-text index, vector index")
	close(release)
	waitFor("still loading the in-memory vector index")
	close(loaded)
	waitFor("")
	if err := a.warming.check(t.Context()); err != nil && strings.Contains(err.Error(), "link graph") {
		t.Errorf("a warmer that failed still holds readiness: %v", err)
	}
}
