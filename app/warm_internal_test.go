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

func TestWorthReturning(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name                 string
		retained, live, goal uint64
		want                 bool
	}{
		// A small store (10k items): its loading left the heap about the
		// size every cycle grows it back to.
		{"heap below its goal", 166 * mb, 46 * mb, 177 * mb, false},
		{"heap at its goal", 177 * mb, 46 * mb, 177 * mb, false},
		{"heap above its goal by less than a cycle regrows", 300 * mb, 46 * mb, 177 * mb, false},
		{"heap above its goal by what a cycle regrows", 308 * mb, 46 * mb, 177 * mb, true},
		// A large store: the loading's peak is many times the heap kept.
		{"heap far above its goal", 1200 * mb, 255 * mb, 383 * mb, true},
		{"live heap past the goal", 200 * mb, 190 * mb, 180 * mb, true},
		{"nothing held", 0, 0, 4 * mb, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := worthReturning(tc.retained, tc.live, tc.goal); got != tc.want {
				t.Errorf("worthReturning(%d MB retained, %d MB live, %d MB goal) = %v, want %v", tc.retained/mb, tc.live/mb, tc.goal/mb, got, tc.want)
			}
		})
	}
}
