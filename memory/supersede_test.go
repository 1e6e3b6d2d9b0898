package memory_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/memory"
)

// TestWriteSupersedes: a write may supersede memories the caller sees;
// one it does not see is not_found, as one that does not exist; earlier
// memories of the same subject come back as proposals; bad validity
// bounds name the tool's field.
func TestWriteSupersedes(t *testing.T) {
	ctx := context.Background()
	svc := openService(t)
	reader := h4r.Anonymous()
	scope := memory.Scope{SessionID: "s1", AgentID: "a1"}
	write := func(req memory.WriteRequest) memory.WriteResult {
		t.Helper()
		res, err := svc.Write(ctx, reader, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	paris := write(memory.WriteRequest{Scope: scope, Type: "fact", Subject: "home_city", Payload: map[string]any{"city": "Paris"}})
	if len(paris.ProposedSupersedes) != 0 {
		t.Errorf("first memory of a subject proposes %v", paris.ProposedSupersedes)
	}
	secret := write(memory.WriteRequest{Scope: scope, Type: "fact", Subject: "home_city", Payload: map[string]any{"city": "Oslo"},
		Sensitivity: ptr(0.95)})
	later := memory.Scope{SessionID: "s2", AgentID: "a1"}
	berlin := write(memory.WriteRequest{Scope: later, Type: "fact", Subject: "home_city", Payload: map[string]any{"city": "Berlin"},
		Supersedes: []string{paris.MemoryID}})
	if len(berlin.ProposedSupersedes) != 0 {
		t.Errorf("berlin proposes %v; paris is superseded already and the sensitive memory is hidden", berlin.ProposedSupersedes)
	}
	rome := write(memory.WriteRequest{Scope: later, Type: "fact", Subject: "home_city", Payload: map[string]any{"city": "Rome"}})
	if want := []string{berlin.MemoryID, paris.MemoryID}; !slices.Equal(rome.ProposedSupersedes, want) {
		t.Errorf("rome proposes %v, want %v (newest first, the hidden one left out)", rome.ProposedSupersedes, want)
	}
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	before := from.Add(-time.Hour)
	tests := []struct {
		name      string
		req       memory.WriteRequest
		code      string
		wantField string
	}{
		{"missing memory", memory.WriteRequest{Supersedes: []string{paris.MemoryID, "memory-none"}}, h4r.ENOTFOUND, "supersedes[1]"},
		{"hidden memory", memory.WriteRequest{Supersedes: []string{secret.MemoryID}}, h4r.ENOTFOUND, "supersedes[0]"},
		{"blank id", memory.WriteRequest{Supersedes: []string{" "}}, h4r.EINVALID, "supersedes[0]"},
		{"valid_until before valid_from", memory.WriteRequest{ValidFrom: &from, ValidUntil: &before}, h4r.EINVALID, "valid_until"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			req.Scope, req.Type, req.Payload = scope, "fact", map[string]any{"city": "Lyon"}
			_, err := svc.Write(ctx, reader, req)
			e, ok := err.(*h4r.Error)
			if !ok || e.Code != tt.code || e.Field != tt.wantField {
				t.Errorf("Write: %v, want %s on %s", err, tt.code, tt.wantField)
			}
		})
	}
}

func ptr(v float64) *float64 { return &v }
