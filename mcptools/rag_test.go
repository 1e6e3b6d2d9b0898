package mcptools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/mcptools"
)

// TestRAGQueryThenFeedback: rag_query returns a stored pack whose id
// rag_feedback takes; a useful verdict counts as a use of the pack's
// items (accessCount, the frequency signal); an unknown id and a bad
// verdict are tool errors naming the argument; the restricted item never
// reaches the public caller.
func TestRAGQueryThenFeedback(t *testing.T) {
	ctx := context.Background()
	a := openApp(t)
	if _, err := a.Store.Upsert(ctx, []h4r.Item{
		{ID: "runbook-login", Kind: "runbook", Text: "The login selector changed to #sign-in in deploy 812."},
		{ID: "secret-login", Kind: "note", Text: "The login admin password is hunter2.", Metadata: h4r.Metadata{RestrictedToGroups: []string{"ops"}}},
	}); err != nil {
		t.Fatal(err)
	}
	svc := a.RAG()
	if svc == nil {
		t.Fatal("the embedded store keeps no packs")
	}
	r := mcptools.NewRegistry("h4r", "test")
	mcptools.AddRAG(r, svc, 30*time.Second)
	cs := connect(t, r, publicCaller())

	text, isErr := call(t, cs, "rag_query", map[string]any{"query": "login selector password"})
	if isErr {
		t.Fatalf("rag_query: %s", text)
	}
	if strings.Contains(text, "hunter2") || strings.Contains(text, "secret-login") {
		t.Fatalf("the restricted item reached a public caller: %s", text)
	}
	var out struct {
		ContextPack struct {
			ID     string `json:"id"`
			Chunks []struct {
				ID string `json:"id"`
			} `json:"chunks"`
		} `json:"context_pack"`
	}
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("rag_query answered %s: %v", text, err)
	}
	if out.ContextPack.ID == "" || len(out.ContextPack.Chunks) != 1 || out.ContextPack.Chunks[0].ID != "runbook-login" {
		t.Fatalf("rag_query pack = %+v, want one chunk runbook-login with an id", out.ContextPack)
	}

	bad := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"unknown pack", map[string]any{"context_pack_id": "cp-nope", "verdict": "useful"}, "context_pack_id"},
		{"bad verdict", map[string]any{"context_pack_id": out.ContextPack.ID, "verdict": "great"}, "verdict"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := call(t, cs, "rag_feedback", tt.args)
			if !isErr || !strings.Contains(text, tt.field) {
				t.Fatalf("rag_feedback %v: error %v, %s; want a tool error naming %s", tt.args, isErr, text, tt.field)
			}
		})
	}

	if text, isErr := call(t, cs, "rag_feedback", map[string]any{"context_pack_id": out.ContextPack.ID, "verdict": "useful"}); isErr || !strings.Contains(text, `"accepted":true`) {
		t.Fatalf("rag_feedback: %v %s", isErr, text)
	}
	// Access counts reach the store on its periodic flush.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		it, err := a.Store.Get(ctx, "runbook-login")
		if err != nil {
			t.Fatal(err)
		}
		if it.Metadata.AccessCount == 1 {
			break
		}
		if it.Metadata.AccessCount > 1 || time.Now().After(deadline) {
			t.Fatalf("accessCount = %d after one useful verdict, want 1", it.Metadata.AccessCount)
		}
	}
}
