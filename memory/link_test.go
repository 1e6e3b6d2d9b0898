package memory_test

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/memory"
)

// TestConcurrentLinksAreAllKept: memory.link calls at once on one memory,
// spread over replicas, keep every link. Linking used to read the memory
// and upsert it with one more link, and of two calls at once the later
// write dropped the other's link. On SQLite the replicas are one process;
// on Postgres (H4R_TEST_DATABASE_URL) two apps share a database, as two
// servers do, which a lock in one process could not cover.
func TestConcurrentLinksAreAllKept(t *testing.T) {
	tests := []struct {
		name string
		open func(t *testing.T) []*app.App
	}{
		{"sqlite", func(t *testing.T) []*app.App {
			cfg := config.Default()
			cfg.DataDir = t.TempDir()
			return []*app.App{openApp(t, cfg)}
		}},
		{"postgres two replicas", func(t *testing.T) []*app.App {
			if os.Getenv("H4R_TEST_DATABASE_URL") == "" {
				t.Skip("H4R_TEST_DATABASE_URL is not set")
			}
			cfg := config.Default()
			cfg.DataDir = t.TempDir()
			cfg.DatabaseURL = pgtest.Schema(t, "h4r_memory_test")
			return []*app.App{openApp(t, cfg), openApp(t, cfg)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			apps := tt.open(t)
			ctx := t.Context()
			scope := memory.Scope{SessionID: "s1", AgentID: "a1"}
			w, err := apps[0].Memory.Write(ctx, h4r.Specialist{}, memory.WriteRequest{Scope: scope, Type: "note", Payload: map[string]any{"summary": "flaky login test"}})
			if err != nil {
				t.Fatal(err)
			}
			const n = 30
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					_, errs[i] = apps[i%len(apps)].Memory.Link(ctx, h4r.Anonymous(), memory.LinkRequest{MemoryID: w.MemoryID,
						Related: memory.Related{FilePath: fmt.Sprintf("src/f%02d.go", i)}, Relation: "touches"})
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("link %d: %v", i, err)
				}
			}
			it, err := apps[0].Store.Get(ctx, w.MemoryID)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range it.Links {
				got = append(got, l.Target)
			}
			slices.Sort(got)
			if len(got) != n {
				t.Fatalf("%d links kept of %d linked at once: %v", len(got), n, got)
			}
			for i, g := range got {
				if want := fmt.Sprintf("file:src/f%02d.go", i); g != want {
					t.Fatalf("links %v: missing %s", got, want)
				}
			}
		})
	}
}

func openApp(t *testing.T, cfg config.Config) *app.App {
	t.Helper()
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}
