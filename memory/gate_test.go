package memory_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/memory"
)

// TestToolsAnswerFromRedactedMemories: a memory whose payload holds PII
// (ingested as an item with piiFields) is read with the PII redacted, and
// the tools that take its id find it as the caller may see it.
func TestToolsAnswerFromRedactedMemories(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	a, err := app.Open(ctx, cfg, app.WithClock(func() time.Time { return time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC) }),
		app.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	pii := h4r.Item{ID: "memory-pii", Kind: memory.Kind, Text: "note. owner: see payload",
		Content: map[string]any{"type": "note", "payload": map[string]any{"owner": "jane.doe@example.com", "topic": "flaky login"}, "scope": map[string]any{"session_id": "s1"}},
		Metadata: h4r.Metadata{ContainsPII: true, TextClean: true, PIIFields: []string{"$.content.payload.owner"},
			Extra: map[string]any{memory.KeySessionID: "s1", memory.KeyType: "note"}}}
	hidden := h4r.Item{ID: "memory-ops", Kind: memory.Kind, Text: "note. ops only",
		Content:  map[string]any{"type": "note", "payload": map[string]any{"topic": "ops"}},
		Metadata: h4r.Metadata{RestrictedToGroups: []string{"ops"}, Extra: map[string]any{memory.KeySessionID: "s1", memory.KeyType: "note"}}}
	if _, err := a.Store.Upsert(ctx, []h4r.Item{pii, hidden}); err != nil {
		t.Fatal(err)
	}
	spec := h4r.Anonymous()
	res, err := a.Memory.Read(ctx, spec, memory.ReadRequest{Scope: memory.Scope{SessionID: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].ID != "memory-pii" {
		t.Fatalf("read %+v, want the PII memory only", res.Items)
	}
	m := res.Items[0]
	payload, _ := m.Payload.(map[string]any)
	if payload["owner"] != h4r.RedactionMarker || payload["topic"] != "flaky login" || !m.Redacted {
		t.Errorf("read payload %v (redacted %v), want the owner redacted and the topic kept", m.Payload, m.Redacted)
	}
	if b, _ := json.Marshal(res); strings.Contains(string(b), "jane.doe") {
		t.Errorf("the read answer names the PII: %s", b)
	}
	stats, err := a.Memory.Stats(ctx, spec, memory.StatsRequest{Scope: memory.Scope{SessionID: "s1"}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Total != 1 || stats.Counts["note"] != 1 {
		t.Errorf("stats %+v, want the visible memory only", stats)
	}
	tests := []struct {
		name string
		id   string
		code string
	}{
		{"visible memory", "memory-pii", ""},
		{"hidden memory", "memory-ops", h4r.ENOTFOUND},
		{"missing memory", "memory-none", h4r.ENOTFOUND},
	}
	var notFound []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Memory.Link(ctx, spec, memory.LinkRequest{MemoryID: tt.id, Related: memory.Related{FilePath: "a.go"}, Relation: "about"})
			if h4r.ErrorCode(err) != tt.code && !(tt.code == "" && err == nil) {
				t.Fatalf("link: %v, want %q", err, tt.code)
			}
			if err != nil {
				notFound = append(notFound, strings.ReplaceAll(h4r.ErrorMessage(err), tt.id, "ID"))
			}
		})
	}
	if len(notFound) == 2 && notFound[0] != notFound[1] {
		t.Errorf("hidden and missing memories answer differently: %q", notFound)
	}
}
