package decision_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
)

// The secret words below occur only in values the bundled policy redacts
// as PII. A caller that names one in its task learns nothing from the
// answer: neither the word nor that it matched.
var secrets = []string{"rossi", "jane.doe", "zanzibar"}

// piiDecision is a decision trace in pkg/auth of org/repo whose rationale
// is PII (its text, which holds the rationale, is redacted with it).
func piiDecision(t *testing.T) h4r.Item {
	t.Helper()
	tr := trace("dt-pii", decision.TypeDecompositionStrategy, "mj7", 0, `,"rationale":"Maria Rossi of zanzibar asked for it"`)
	tr.ProjectKey = "org/repo"
	tr.Metadata = &h4r.Metadata{ContainsPII: true, PIIFields: []string{"$.content.rationale"}, Tags: []string{"pkg/auth"}}
	p, err := decision.Prepare(tr, "", t0)
	if err != nil {
		t.Fatal(err)
	}
	it, err := p.Item()
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// piiCommit is a commit trace in pkg/auth of org/repo whose summary (its
// text) and decisions are PII.
func piiCommit() h4r.Item {
	c := ct{sha: "p1", summary: "Rate limits for jane.doe at zanzibar, per Rossi", status: "landed", areas: []string{"pkg/auth"}}
	it := c.item("org/repo")
	it.Content["decisions"] = []any{map[string]any{"context": "auth rate limiting", "reasoning": "Rossi wanted zanzibar throttled"}}
	it.Metadata.ContainsPII = true
	it.Metadata.PIIFields = []string{"$.content.summary", "$.content.decisions"}
	return it
}

// checkNoSecret fails when what (as JSON) names a secret word.
func checkNoSecret(t *testing.T, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(strings.ToLower(string(b)), s) {
			t.Errorf("%s names %q, which only redacted values hold: %s", what, s, b)
		}
	}
}

// TestPushesCarryOnlyRedactedText: a push's trace, trigger and suggestion
// are computed from the redacted trace, whether the push answers a
// context update or a newly ingested trace.
func TestPushesCarryOnlyRedactedText(t *testing.T) {
	update := decision.ContextUpdate{Type: "context_update", Repo: "org/repo", Areas: []string{"pkg/auth"},
		CurrentTask: "auth rate limiting for Rossi at zanzibar jane.doe"}
	tests := []struct {
		name     string
		item     func(*testing.T) h4r.Item
		ingested bool // the trace arrives after the update (notify), else before it
	}{
		{"decision rationale, on update", piiDecision, false},
		{"decision rationale, on ingest", piiDecision, true},
		{"commit summary and decisions, on update", func(*testing.T) h4r.Item { return piiCommit() }, false},
		{"commit summary and decisions, on ingest", func(*testing.T) h4r.Item { return piiCommit() }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			hub, err := decision.NewHub(r.svc, nil, decision.WithPushDebounce(0), decision.WithPushThreshold(0.5))
			if err != nil {
				t.Fatal(err)
			}
			defer hub.Close()
			sub, err := hub.Join("s", public())
			if err != nil {
				t.Fatal(err)
			}
			it := tt.item(t)
			store := func() {
				if _, err := r.store.Upsert(t.Context(), []h4r.Item{it}); err != nil {
					t.Fatal(err)
				}
			}
			if !tt.ingested {
				store()
			}
			if err := hub.Update(t.Context(), sub, update); err != nil {
				t.Fatal(err)
			}
			if tt.ingested {
				store()
				hub.Ingested(t.Context(), []string{it.ID})
			}
			select {
			case p := <-sub.Out:
				if p.Trace["id"] != it.ID {
					t.Fatalf("pushed %v, want %s", p.Trace["id"], it.ID)
				}
				checkNoSecret(t, "the push", p)
				if !strings.Contains(p.Suggestion, h4r.RedactionMarker) {
					t.Errorf("suggestion %q, want the redacted value's marker", p.Suggestion)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no push")
			}
		})
	}
}

// TestPrefetchReasonsFromRedactedText: a precedent's relevance and match
// reason are measured on the redacted trace: a task naming words of the
// redacted text neither sees them nor ranks the trace higher for them.
func TestPrefetchReasonsFromRedactedText(t *testing.T) {
	for _, tt := range []struct {
		name string
		item func(*testing.T) h4r.Item
	}{
		{"decision rationale", piiDecision},
		{"commit summary and decisions", func(*testing.T) h4r.Item { return piiCommit() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			it := tt.item(t)
			if _, err := r.store.Upsert(t.Context(), []h4r.Item{it}); err != nil {
				t.Fatal(err)
			}
			ask := func(task string) decision.Precedent {
				t.Helper()
				res, err := r.svc.Prefetch(t.Context(), public(), decision.PrefetchRequest{Repo: "org/repo", Areas: []string{"pkg/auth"}, TaskDescription: task})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Precedents) != 1 {
					t.Fatalf("precedents %+v, want the PII trace", res.Precedents)
				}
				checkNoSecret(t, "the prefetch answer", res)
				return res.Precedents[0]
			}
			guessed, unguessed := ask("Rossi zanzibar jane.doe"), ask("quokka wombat numbat")
			if guessed.Relevance != unguessed.Relevance || guessed.MatchReason != unguessed.MatchReason {
				t.Errorf("words of the redacted text changed the answer: %+v, and without them %+v", guessed, unguessed)
			}
		})
	}
}

// TestEscalationCasesFromRedactedTraces: a similar case is read from the
// redacted trace: a redacted sha is the marker, and redacted errors do not
// make a trace similar to a request naming them.
func TestEscalationCasesFromRedactedTraces(t *testing.T) {
	tests := []struct {
		name   string
		pii    string
		errors []string
		cases  int
		sha    string
	}{
		{"redacted sha", "$.content.sha", nil, 1, h4r.RedactionMarker},
		{"redacted errors", "$.content.errors", []string{"rossi zanzibar jane.doe timeout"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			c := ct{sha: "c0ffee-secret", summary: "fix auth", status: "landed", areas: []string{"pkg/auth"}, iterations: 2,
				errors: []string{"rossi zanzibar jane.doe timeout"}}
			it := c.item("org/repo")
			it.ID = "org/repo@case-1"
			it.Metadata.ContainsPII, it.Metadata.TextClean, it.Metadata.PIIFields = true, true, []string{tt.pii}
			if _, err := r.store.Upsert(t.Context(), []h4r.Item{it}); err != nil {
				t.Fatal(err)
			}
			h, err := r.svc.Escalation(t.Context(), public(), decision.EscalationRequest{Repo: "org/repo", Area: "pkg/auth", CurrentTier: 1, Errors: tt.errors})
			if err != nil {
				t.Fatal(err)
			}
			if len(h.SimilarCases) != tt.cases {
				t.Fatalf("similar cases %+v, want %d", h.SimilarCases, tt.cases)
			}
			if tt.cases > 0 && h.SimilarCases[0].SHA != tt.sha {
				t.Errorf("sha %q, want %q", h.SimilarCases[0].SHA, tt.sha)
			}
			checkNoSecret(t, "the escalation hint", h)
		})
	}
}

// TestPrecedentReasonsOfARedactedTrace: a cited precedent's reason becomes
// the context of a cites_precedent link; when the trace is redacted, every
// read of it (by id, and each preset that finds it) carries the marker in
// place of that context, never the reason.
func TestPrecedentReasonsOfARedactedTrace(t *testing.T) {
	r := newRig(t)
	tr := trace("dt-pii-cites", decision.TypeFileAssignment, "mj7", 0, `,"decision":{"files":["pkg/auth/limits.go"]},"precedent_cited":[{"epic_id":"mj3","reason":"Rossi of zanzibar asked for it"}]`)
	tr.Metadata = &h4r.Metadata{ContainsPII: true}
	if _, err := r.svc.RecordTraces(t.Context(), []decision.Trace{tr}, "", true); err != nil {
		t.Fatal(err)
	}
	got, err := r.svc.Get(t.Context(), public(), "dt-pii-cites")
	if err != nil {
		t.Fatal(err)
	}
	checkNoSecret(t, "the trace read by id", got)
	if ctx := got.Links[0].Context; got.Links[0].LinkType != h4r.LinkCitesPrecedent || ctx == nil || *ctx != h4r.RedactionMarker {
		t.Errorf("the precedent's link %+v, want its context redacted", got.Links[0])
	}
	for _, q := range []decision.PresetQuery{
		{Preset: decision.PresetByEpic, Epic: "mj7"},
		{Preset: decision.PresetByPrecedent, Epic: "mj3"},
		{Preset: decision.PresetFileHistory, File: "pkg/auth/limits.go"},
	} {
		ans, err := r.svc.Preset(t.Context(), public(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.DecisionTraces) != 1 {
			t.Fatalf("%s: %d traces, want the redacted one", q.Preset, len(ans.DecisionTraces))
		}
		checkNoSecret(t, q.Preset, ans)
	}
}
