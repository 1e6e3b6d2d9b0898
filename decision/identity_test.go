package decision_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
	committrace "github.com/h4r/h4r/trace"
)

// realTrace stores a trace as the trace ingest writes it (committrace.Items):
// item id {repo}@{sha}, content id the trace's UUID.
func realTrace(t *testing.T, r *rig, sha, branch string, areas []string, escalated bool) *committrace.CommitTrace {
	t.Helper()
	tr := &committrace.CommitTrace{SHA: sha, Repo: "org/repo", Branch: branch, Author: "dev", Timestamp: t0.Add(-time.Hour),
		Areas: areas, Summary: "work on " + branch, Mode: committrace.ModeRLM, Status: committrace.StatusLanded, Iterations: 4,
		Errors: []committrace.ErrorRecord{{ID: "e", Message: "test failure", Iterations: 1}}}
	if escalated {
		tr.Escalations = []committrace.Escalation{{FromTier: 1, ToTier: 2, Reason: "stuck", Iteration: 3}}
	}
	tr.Normalize()
	items, err := committrace.Items(tr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.Upsert(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestPrefetchByBranchAlone: a trace made on the session's branch is found
// by a prefetch that names only the repository and the branch.
func TestPrefetchByBranchAlone(t *testing.T) {
	r := newRig(t)
	want := realTrace(t, r, "aaaaaaa1", "feature/auth-refactor", []string{"pkg/auth"}, false)
	realTrace(t, r, "bbbbbbb2", "feature/other", []string{"pkg/billing"}, false)
	res, err := r.svc.Prefetch(t.Context(), public(), decision.PrefetchRequest{Repo: "org/repo", Branch: "feature/auth-refactor"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Precedents) != 1 || res.Precedents[0].Trace["sha"] != want.SHA {
		t.Fatalf("precedents %v, want only the trace on feature/auth-refactor", res.Precedents)
	}
	if p := res.Precedents[0]; p.MatchReason != "same branch feature/auth-refactor" || p.Relevance != 1 {
		t.Errorf("relevance %v reason %q, want 1 and the branch", p.Relevance, p.MatchReason)
	}
	if _, err := r.svc.Prefetch(t.Context(), public(), decision.PrefetchRequest{Repo: "org/repo", Branch: string(make([]byte, 300))}); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Errorf("a 300-byte branch: %v, want invalid_argument", err)
	}
}

// TestTraceIdentityIsTheUUID: prefetch, WebSocket pushes and escalation
// cases name a commit trace by the UUID that search, GET /v1/trace and its
// decisions' trace_id use, not by its item id.
func TestTraceIdentityIsTheUUID(t *testing.T) {
	r := newRig(t)
	tr := realTrace(t, r, "ccccccc3", "main", []string{"pkg/auth"}, true)
	itemID := committrace.ItemID(tr.Repo, tr.SHA)

	res, err := r.svc.Prefetch(t.Context(), public(), decision.PrefetchRequest{Repo: "org/repo", Areas: []string{"pkg/auth"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Precedents) != 1 || res.Precedents[0].Trace["id"] != tr.ID {
		t.Fatalf("prefetch names the trace %v, want its UUID %s", res.Precedents, tr.ID)
	}

	esc, err := r.svc.Escalation(t.Context(), public(), decision.EscalationRequest{Repo: "org/repo", Area: "pkg/auth", CurrentTier: 1, Iterations: 3, Errors: []string{"test failure"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(esc)
	var out struct {
		SimilarCases []struct {
			TraceID string `json:"trace_id"`
		} `json:"similar_cases"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.SimilarCases) == 0 || out.SimilarCases[0].TraceID != tr.ID {
		t.Fatalf("similar_cases %s, want trace_id %s (not %s)", b, tr.ID, itemID)
	}

	hub, err := decision.NewHub(r.svc, nil, decision.WithPushDebounce(0))
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	sub, err := hub.Join("s1", public())
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Update(t.Context(), sub, decision.ContextUpdate{Type: "context_update", Repo: "org/repo", Areas: []string{"pkg/auth"}}); err != nil {
		t.Fatal(err)
	}
	// The update itself pushes the stored trace it matches.
	select {
	case p := <-sub.Out:
		if p.Trace["id"] != tr.ID {
			t.Errorf("pushed %v, want the UUID %s (not %s)", p.Trace["id"], tr.ID, itemID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no push")
	}
}
