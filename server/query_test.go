package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/rag"
	"github.com/h4r/h4r/server"
)

// ragStack is the real stack with the retrieval contract's routes: packs and
// feedback kept in the SQLite store as app wires them, behind keys.
type ragStack struct {
	base  string
	store app.Store
}

func newRAGStack(t *testing.T, configure func(*config.Config)) ragStack {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	if configure != nil {
		configure(&cfg)
	}
	a, err := app.Open(ctx, cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	if _, err := a.Store.Upsert(ctx, fixtureItems(t)); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	svc := a.RAG()
	if svc == nil {
		t.Fatal("app.RAG() = nil over the SQLite store")
	}
	st := &stack{srv: server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithAuthenticator(keys), server.WithClock(clock), server.WithRAG(svc)), store: a.Store}
	return ragStack{base: st.serve(t), store: a.Store}
}

func decodeQuery(t *testing.T, r response) rag.QueryResponse {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("POST /query: %d %s", r.status, r.body)
	}
	var out rag.QueryResponse
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestQueryAnswersTheRetrievalContractsShape: every field the retrieval contract names is
// there with its type, the pack is the engine's (ranked, k honoured), and
// the id is stored (feedback on it is accepted).
func TestQueryAnswersTheRetrievalContractsShape(t *testing.T) {
	s := newRAGStack(t, nil)
	r := post(t, s.base+"/query", `{"session_id": "s1", "agent_id": "a1", "query": "login selector test failure", "k": 3,
		"rerank": true, "working_dir": "/src/app", "git": {"sha": "abc123", "branch": "main", "changed_files": ["login.spec.ts"]}}`, bearer(healerKey)...)
	var raw struct {
		ContextPack struct {
			ID     string                       `json:"id"`
			Tokens int                          `json:"tokens"`
			Chunks []map[string]json.RawMessage `json:"chunks"`
		} `json:"context_pack"`
		Citations []map[string]any `json:"citations"`
		Debug     struct {
			Plan    map[string]any `json:"plan"`
			Timings map[string]any `json:"timings"`
		} `json:"debug"`
	}
	out := decodeQuery(t, r)
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(raw.ContextPack.ID, "cp_") {
		t.Errorf("context_pack.id = %q", raw.ContextPack.ID)
	}
	if n := len(raw.ContextPack.Chunks); n == 0 || n > 3 {
		t.Fatalf("%d chunks with k=3", n)
	}
	for _, ch := range raw.ContextPack.Chunks {
		for _, key := range []string{"id", "text", "score", "source", "path", "sha", "line_range"} {
			if _, ok := ch[key]; !ok {
				t.Errorf("chunk %s has no %q", ch["id"], key)
			}
		}
	}
	sum := 0
	for i, ch := range out.ContextPack.Chunks {
		if i > 0 && ch.Score > out.ContextPack.Chunks[i-1].Score {
			t.Errorf("chunks not in rank order: %v", out.ContextPack.Chunks)
		}
		if ch.Source == "" {
			t.Errorf("chunk %s has no source", ch.ID)
		}
		sum++
	}
	if raw.ContextPack.Tokens <= 0 {
		t.Errorf("tokens = %d", raw.ContextPack.Tokens)
	}
	if raw.Debug.Plan["k"] != float64(3) || raw.Debug.Plan["query_type"] != string(h4r.DefaultQueryType) || raw.Debug.Timings["totalMs"] == nil {
		t.Errorf("debug = %+v", raw.Debug)
	}
	if raw.Citations == nil {
		t.Error("citations is null, want a list")
	}
	if r := post(t, s.base+"/feedback", `{"context_pack_id": "`+raw.ContextPack.ID+`", "verdict": "partial", "notes": "half of it"}`, bearer(healerKey)...); r.status != http.StatusOK || !strings.Contains(string(r.body), `"ok":true`) {
		t.Errorf("feedback on the stored pack: %d %s", r.status, r.body)
	}
}

// TestQueryCitesPathsAndLines: an item whose content names a path, a
// commit and lines is cited with them.
func TestQueryCitesPathsAndLines(t *testing.T) {
	s := newRAGStack(t, nil)
	item := `{"items": [{"id": "chunk-login", "kind": "chunk", "text": "func login() checks the zebra token before the session starts",
		"content": {"path": "auth/login.go", "commit_sha": "deadbeef", "start_line": 10, "end_line": 24}}]}`
	if r := post(t, s.base+"/v1/items", item, bearer(adminKey)...); r.status != http.StatusOK {
		t.Fatalf("ingest: %d %s", r.status, r.body)
	}
	out := decodeQuery(t, post(t, s.base+"/query", `{"session_id": "s", "agent_id": "a", "query": "zebra token", "k": 1}`, bearer(publicKey)...))
	if len(out.ContextPack.Chunks) != 1 {
		t.Fatalf("chunks = %+v", out.ContextPack.Chunks)
	}
	ch := out.ContextPack.Chunks[0]
	if ch.ID != "chunk-login" || ch.Path != "auth/login.go" || ch.SHA != "deadbeef" || len(ch.LineRange) != 2 || ch.LineRange[0] != 10 || ch.LineRange[1] != 24 || ch.Source != "chunk" {
		t.Errorf("chunk = %+v", ch)
	}
	if len(out.Citations) != 1 || out.Citations[0].Path != "auth/login.go" || out.Citations[0].SHA != "deadbeef" || out.Citations[0].ChunkID != "chunk-login" {
		t.Errorf("citations = %+v", out.Citations)
	}
}

// TestQueryAndFeedbackRefuseBadInput: each bad body is a 400 (or 404)
// naming its field.
func TestQueryAndFeedbackRefuseBadInput(t *testing.T) {
	s := newRAGStack(t, nil)
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"no session_id", "/query", `{"agent_id": "a", "query": "q"}`, 400, "session_id"},
		{"no agent_id", "/query", `{"session_id": "s", "query": "q"}`, 400, "agent_id"},
		{"blank query", "/query", `{"session_id": "s", "agent_id": "a", "query": "  "}`, 400, "query"},
		{"k zero", "/query", `{"session_id": "s", "agent_id": "a", "query": "q", "k": 0}`, 400, "k"},
		{"k a string", "/query", `{"session_id": "s", "agent_id": "a", "query": "q", "k": "3"}`, 400, "k"},
		{"unknown field", "/query", `{"session_id": "s", "agent_id": "a", "query": "q", "clearance": "restricted"}`, 400, "clearance"},
		{"git field misspelt", "/query", `{"session_id": "s", "agent_id": "a", "query": "q", "git": {"changedFiles": []}}`, 400, "git.changedFiles"},
		{"unknown pack", "/feedback", `{"context_pack_id": "cp_00000000000000000000000000000000", "verdict": "useful"}`, 404, "context_pack_id"},
		{"no pack id", "/feedback", `{"verdict": "useful"}`, 400, "context_pack_id"},
		{"other verdict", "/feedback", `{"context_pack_id": "cp_x", "verdict": "great"}`, 400, "verdict"},
		{"verdict in capitals", "/feedback", `{"context_pack_id": "cp_x", "verdict": "USEFUL"}`, 400, "verdict"},
		{"notes a number", "/feedback", `{"context_pack_id": "cp_x", "verdict": "wrong", "notes": 3}`, 400, "notes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, s.base+tt.path, tt.body, bearer(publicKey)...)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			if e := checkErrorShape(t, r); e.Field != tt.field {
				t.Errorf("field %q, want %q (%s)", e.Field, tt.field, e.Message)
			}
		})
	}
}

// TestFeedbackOnAnotherKeysPackIsNotFound: a pack is judged only by the
// principal it was delivered to; to anyone else it does not exist.
func TestFeedbackOnAnotherKeysPackIsNotFound(t *testing.T) {
	s := newRAGStack(t, nil)
	out := decodeQuery(t, post(t, s.base+"/query", `{"session_id": "s", "agent_id": "a", "query": "login selector"}`, bearer(healerKey)...))
	body := `{"context_pack_id": "` + out.ContextPack.ID + `", "verdict": "wrong"}`
	if r := post(t, s.base+"/feedback", body, bearer(publicKey)...); r.status != http.StatusNotFound {
		t.Errorf("another key's feedback: %d %s, want 404", r.status, r.body)
	}
	if r := post(t, s.base+"/feedback", body, bearer(healerKey)...); r.status != http.StatusOK {
		t.Errorf("the owner's feedback: %d %s", r.status, r.body)
	}
}

// TestUsefulFeedbackRaisesFrequency: a useful verdict counts as a use of
// each item of the pack — accessCount, and with it the frequency signal of
// later packs — and a wrong verdict does not.
func TestUsefulFeedbackRaisesFrequency(t *testing.T) {
	s := newRAGStack(t, nil)
	frequency := func(id string) float64 {
		p := decodePack(t, post(t, s.base+"/v1/context-pack", `{"query": {"type": "keyword", "text": "checkout intermittently"}, "include_scores": true}`, bearer(publicKey)...))
		for _, r := range p.Results {
			if r.ID == id && r.Signals != nil {
				return r.Signals[h4r.Frequency]
			}
		}
		t.Fatalf("%s not in the pack: %+v", id, p.Results)
		return 0
	}
	before := frequency("mem-checkout")
	out := decodeQuery(t, post(t, s.base+"/query", `{"session_id": "s", "agent_id": "a", "query": "checkout intermittently", "k": 1}`, bearer(publicKey)...))
	if len(out.ContextPack.Chunks) != 1 || out.ContextPack.Chunks[0].ID != "mem-checkout" {
		t.Fatalf("chunks = %+v", out.ContextPack.Chunks)
	}
	post(t, s.base+"/feedback", `{"context_pack_id": "`+out.ContextPack.ID+`", "verdict": "wrong"}`, bearer(publicKey)...)
	if r := post(t, s.base+"/feedback", `{"context_pack_id": "`+out.ContextPack.ID+`", "verdict": "useful"}`, bearer(publicKey)...); r.status != http.StatusOK {
		t.Fatalf("feedback: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		it, err := s.store.Get(t.Context(), "mem-checkout")
		if err != nil {
			t.Fatal(err)
		}
		if it.Metadata.AccessCount == 1 {
			break
		}
		if it.Metadata.AccessCount > 1 || time.Now().After(deadline) {
			t.Fatalf("accessCount = %d after one useful and one wrong verdict, want 1", it.Metadata.AccessCount)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after := frequency("mem-checkout"); after <= before {
		t.Errorf("frequency signal %v after useful feedback, %v before", after, before)
	}
}

// TestQueryNeverDeliversRestrictedItemsToAPublicKey: /query passes the
// policy slicer with the key's clearance; the body cannot raise it, and
// the stored pack holds only what was delivered.
func TestQueryNeverDeliversRestrictedItemsToAPublicKey(t *testing.T) {
	s := newRAGStack(t, nil)
	q := `{"session_id": "s", "agent_id": "security_lead", "query": "ops runbook load balancer login credentials staging payment incident", "k": 50}`
	pub := post(t, s.base+"/query", q, bearer(publicKey)...)
	out := decodeQuery(t, pub)
	for _, secret := range []string{"OPS-ONLY-RUNBOOK", "TOPSECRET", "CONFIDENTIAL-INCIDENT-NOTE", "mem-ops", "mem-qa"} {
		if strings.Contains(string(pub.body), secret) {
			t.Errorf("the public key's answer contains %q: %s", secret, pub.body)
		}
	}
	if len(out.ContextPack.Chunks) == 0 {
		t.Fatal("the public key got nothing at all: the test shows nothing")
	}
	// The same query with a key cleared for ops finds the runbook, so the
	// public key's answer lacks it because of policy, not because the query
	// misses it.
	got := decodeQuery(t, post(t, s.base+"/query", q, bearer(restrictedKey)...))
	found := false
	for _, ch := range got.ContextPack.Chunks {
		found = found || ch.ID == "mem-ops"
	}
	if !found {
		t.Errorf("the restricted key did not get mem-ops either: %+v", got.ContextPack.Chunks)
	}
}
