package memory_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/memory"
)

// tickingClock advances a minute at each reading, so that memories
// written one after another have distinct times.
type tickingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *tickingClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Minute)
	return c.t
}

// openService is the memory service as app.Open wires it: a SQLite store,
// the bundled OPA policy and its slicer.
func openService(t *testing.T) *memory.Service {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	clock := &tickingClock{t: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)}
	a, err := app.Open(context.Background(), cfg, app.WithClock(clock.now), app.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a.Memory
}

func TestReadOrder(t *testing.T) {
	ctx := context.Background()
	svc := openService(t)
	scope := memory.Scope{SessionID: "s1", AgentID: "a1"}
	var ids []string
	for _, summary := range []string{"first flaky selector", "second note", "third flaky selector"} {
		res, err := svc.Write(ctx, h4r.Specialist{}, memory.WriteRequest{Scope: scope, Type: "note", Payload: map[string]any{"summary": summary}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MemoryID)
	}
	spec := h4r.Anonymous()
	tests := []struct {
		name string
		req  memory.ReadRequest
		want []string
	}{
		{"newest first", memory.ReadRequest{Scope: scope}, []string{ids[2], ids[1], ids[0]}},
		{"the limit keeps the newest", memory.ReadRequest{Scope: scope, Limit: 2}, []string{ids[2], ids[1]}},
		{"another session", memory.ReadRequest{Scope: memory.Scope{SessionID: "s2"}}, nil},
		{"text finds by content", memory.ReadRequest{Scope: scope, Filter: memory.Filter{Text: "flaky selector"}}, []string{ids[0], ids[2]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := svc.Read(ctx, spec, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range res.Items {
				got = append(got, m.ID)
			}
			if tt.req.Filter.Text != "" {
				slices.Sort(got) // by relevance: the set is the point
				tt.want = slices.Sorted(slices.Values(tt.want))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("read %v, want %v", got, tt.want)
			}
		})
	}
	stats, err := svc.Stats(ctx, spec, memory.StatsRequest{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := svc.Read(ctx, spec, memory.ReadRequest{Scope: scope, Limit: 1})
	if stats.Total != 3 || stats.Counts["note"] != 3 || stats.LastWriteAt == nil || !stats.LastWriteAt.Equal(res.Items[0].CreatedAt) {
		t.Errorf("stats %+v, want 3 notes, last written when the newest was", stats)
	}
}
