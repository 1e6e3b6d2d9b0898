package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/auth"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
)

// decisionStack is the real service (app.Open) with the decision routes,
// behind the keys of testdata/keys.json, served on loopback. It holds no
// fixture items: each test records what it asks about.
type decisionStack struct {
	base string
	app  *app.App
}

func newDecisionStack(t testing.TB, opts ...server.Option) *decisionStack {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(context.Background(), cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	keys, err := auth.Load("testdata/keys.json")
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]server.Option{server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithAuthenticator(keys), server.WithClock(clock), server.WithRateLimit(100000), server.WithDecisions(a.Decisions)}, opts...)
	st := &stack{srv: server.New(a.Engine, a.Store, opts...), store: a.Store}
	return &decisionStack{base: st.serve(t), app: a}
}

// mj100Traces are the done-when scenario's three decisions citing epic
// mj100, and a fourth restricted to the ops group.
const mj100Traces = `{"decision_traces": [
 {"id": "dt-one", "decision_type": "decomposition_strategy", "epic_id": "mj101", "agent_name": "coordinator", "project_key": "/repo",
  "decision": {"strategy": "file-based"}, "rationale": "feature-based failed 3 times on auth work",
  "alternatives": [{"option": "feature-based", "rejected_because": "70% failure rate"}],
  "precedent_cited": [{"epic_id": "mj100", "reason": "solved OAuth refresh the same way"}],
  "timestamp": 1772366400000, "links": [{"type": "applies_pattern", "target": "mem-oauth-buffer", "targetType": "memory"}],
  "metadata": {"tags": ["pkg/auth"]}},
 {"id": "dt-two", "decision_type": "file_assignment", "epic_id": "mj102", "bead_id": "mj102-1", "agent_name": "coordinator", "project_key": "/repo",
  "decision": {"files": ["src/auth.ts"], "assigned_to": "worker-a"}, "rationale": "worker-a succeeded with auth code",
  "alternatives": [{"option": "worker-b", "rejected_because": "two failures in src/auth"}],
  "precedent_cited": [{"epic_id": "mj100", "reason": "same file split"}], "timestamp": "2026-03-02T12:00:00Z",
  "metadata": {"tags": ["pkg/auth"]}},
 {"id": "dt-three", "decision_type": "exception_granted", "epic_id": "mj103", "agent_name": "coordinator", "project_key": "/repo",
  "decision": {"merge": "src/auth/**"}, "alternatives": [], "precedent_cited": [{"epic_id": "mj100"}], "timestamp": "2026-03-03T12:00:00Z",
  "metadata": {"tags": ["pkg/auth"]}},
 {"id": "dt-ops-only", "decision_type": "exception_granted", "epic_id": "mj104", "agent_name": "coordinator", "project_key": "/repo",
  "decision": {"rotate": "prod keys"}, "precedent_cited": [{"epic_id": "mj100", "reason": "incident"}], "timestamp": "2026-03-04T12:00:00Z",
  "metadata": {"restrictedToGroups": ["ops"], "tags": ["pkg/auth"]}}
]}`

func recordMJ100(t *testing.T, d *decisionStack) {
	t.Helper()
	r := post(t, d.base+"/v1/decision-traces", mj100Traces, bearer(ingestKey)...)
	if r.status != http.StatusOK {
		t.Fatalf("recording: %d %s", r.status, r.body)
	}
}

type answer struct {
	DecisionTraces []map[string]any `json:"decision_traces"`
	Withheld       int              `json:"withheld"`
}

func getAnswer(t *testing.T, u, key string) answer {
	t.Helper()
	r := do(t, http.MethodGet, u, nil, bearer(key)...)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, r.status, r.body)
	}
	var a answer
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func answerIDs(a answer) []string {
	var ids []string
	for _, d := range a.DecisionTraces {
		ids = append(ids, d["id"].(string))
	}
	return ids
}

// TestDecisionsCitingPrecedentOverHTTP: record decisions citing a precedent
// and ask for them, and the restricted precedent that a public key never
// sees.
func TestDecisionsCitingPrecedentOverHTTP(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	u := d.base + "/v1/decision-traces?preset=decision_traces_by_precedent&epic=mj100"
	a := getAnswer(t, u, publicKey)
	if got := answerIDs(a); !slices.Equal(got, []string{"dt-three", "dt-two", "dt-one"}) {
		t.Errorf("public key: %v, want the three newest first", got)
	}
	if alts, _ := a.DecisionTraces[2]["alternatives"].([]any); len(alts) != 1 {
		t.Errorf("dt-one alternatives = %v", a.DecisionTraces[2]["alternatives"])
	}
	if got := answerIDs(getAnswer(t, u, restrictedKey)); !slices.Equal(got, []string{"dt-ops-only", "dt-three", "dt-two", "dt-one"}) {
		t.Errorf("ops key: %v, want four", got)
	}
	// The other presets and the single read, for the public key.
	tests := []struct {
		name, query string
		want        []string
	}{
		{"pattern", "preset=decisions_by_pattern&pattern=mem-oauth-buffer", []string{"dt-one"}},
		{"file history", "preset=file_assignment_history&file=" + url.QueryEscape("src/auth.ts"), []string{"dt-two"}},
		{"epic", "preset=decisions_by_epic&epic=mj104", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?"+tt.query, publicKey)); !slices.Equal(got, tt.want) {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
	r := do(t, http.MethodGet, d.base+"/v1/decision-traces/dt-ops-only", nil, bearer(publicKey)...)
	if e := checkErrorShape(t, r); e.Code != h4r.ENOTFOUND {
		t.Errorf("the restricted decision for a public key: %d %s", r.status, r.body)
	}
	r = do(t, http.MethodGet, d.base+"/v1/decision-traces/dt-ops-only", nil, bearer(restrictedKey)...)
	if r.status != http.StatusOK {
		t.Errorf("the restricted decision for its group: %d %s", r.status, r.body)
	}
}

func TestDecisionBadInputNamesTheField(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	tests := []struct {
		name, path, body, field, code string
	}{
		{"decision type that is no name", "/v1/decision-traces", `{"decision_type": "Vibes!", "agent_name": "a", "project_key": "p", "decision": {}}`, "decision_type", h4r.EINVALID},
		{"alternatives as JSON text that is no JSON", "/v1/decision-traces", `{"decision_type": "review_approval", "agent_name": "a", "project_key": "p", "decision": {}, "alternatives": "[{\"option\": "}`, "alternatives", h4r.EINVALID},
		{"outcome_event_id a fraction", "/v1/decision-traces", `{"decision_type": "review_approval", "agent_name": "a", "project_key": "p", "decision": {}, "outcome_event_id": 4.5}`, "outcome_event_id", h4r.EINVALID},
		{"trace link mixing vocabularies", "/v1/decision-traces", `{"decision_type": "review_approval", "agent_name": "a", "project_key": "p", "decision": {}, "links": [{"linkType": "similar_to", "target": "mj9"}]}`, "links[0]", h4r.EINVALID},
		{"links mixing vocabularies", "/v1/items/dt-one/links", `{"links": [{"type": "similar_to", "entityId": "mj9", "entityType": "epic"}]}`, "links[0]", h4r.EINVALID},
		{"alternatives not a list", "/v1/decision-traces", `{"decision_type": "review_approval", "agent_name": "a", "project_key": "p", "decision": {}, "alternatives": {"option": "x"}}`, "alternatives", h4r.EINVALID},
		{"link to a missing decision", "/v1/decision-traces", `{"decision_type": "conflict_resolution", "agent_name": "a", "project_key": "p", "decision": {}, "precedent_cited": [{"decision_id": "dt-missing"}]}`, "precedent_cited[0].decision_id", h4r.EINVALID},
		{"in a batch", "/v1/decision-traces", `{"decision_traces": [{"decision_type": "review_approval", "agent_name": "a", "project_key": "p", "decision": {}}, {"decision_type": "no pe", "agent_name": "a", "project_key": "p", "decision": {}}]}`, "decision_traces[1].decision_type", h4r.EINVALID},
		{"unknown field", "/v1/decision-traces", `{"decision_type": "review_approval", "agent_name": "a", "project_key": "p", "decision": {}, "rationle": "typo"}`, "rationle", h4r.EINVALID},
		{"event for a missing decision", "/v1/events", `{"type": "subtask_outcome", "decision_id": "dt-missing"}`, "decision_id", h4r.EINVALID},
		{"link edit to a missing decision", "/v1/items/dt-one/links", `{"links": [{"type": "similar_to", "target": "dt-missing", "targetType": "decision"}]}`, "links[0].target", h4r.EINVALID},
		{"link edit with a bad target type", "/v1/items/dt-one/links", `{"links": [{"type": "similar_to", "target": "x", "targetType": "Not A Type"}]}`, "links[0].targetType", h4r.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, d.base+tt.path, tt.body, bearer(ingestKey)...)
			e := checkErrorShape(t, r)
			if e.Code != tt.code || e.Field != tt.field {
				t.Errorf("%s %q, want %s %q (%s)", e.Code, e.Field, tt.code, tt.field, e.Message)
			}
		})
	}
	for _, q := range []string{"", "preset=nope", "preset=file_assignment_history", "preset=decision_traces_by_precedent&epic=mj100&limit=0", "preset=review_decisions_rejected&color=red", "preset=review_decisions&status=maybe"} {
		r := do(t, http.MethodGet, d.base+"/v1/decision-traces?"+q, nil, bearer(publicKey)...)
		if e := checkErrorShape(t, r); e.Code != h4r.EINVALID || e.Field == "" {
			t.Errorf("?%s: %+v, want invalid_argument naming a field", q, e)
		}
	}
	// Nothing of the refused batch was written.
	a := getAnswer(t, d.base+"/v1/decision-traces?preset=decisions_by_epic&epic=mj101", publicKey)
	if len(a.DecisionTraces) != 1 {
		t.Errorf("mj101 holds %v", answerIDs(a))
	}
}

// TestLinkEditsOverHTTP: POST appends links without re-sending the item,
// DELETE removes them; a link to an entity that is no item is stored and
// queryable; an outcome event links to its decision.
func TestLinkEditsOverHTTP(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	r := post(t, d.base+"/v1/items/dt-three/links", `{"links": [{"type": "cites_precedent", "target": "mj200", "targetType": "epic", "context": "same exception"},
		{"type": "learned_from", "target": "dt-one", "targetType": "decision"}]}`, bearer(ingestKey)...)
	if r.status != http.StatusOK {
		t.Fatalf("POST links: %d %s", r.status, r.body)
	}
	var la struct {
		Links []h4r.Link `json:"links"`
	}
	if err := json.Unmarshal(r.body, &la); err != nil || len(la.Links) != 3 {
		t.Fatalf("links after append: %s (%v)", r.body, err)
	}
	it, err := d.app.Store.Get(t.Context(), "dt-three")
	if err != nil || it.Metadata.Version != 2 || it.Links[1].Context != "same exception" || it.Text == "" {
		t.Errorf("stored item after append: %+v, %v", it, err)
	}
	if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?preset=decision_traces_by_precedent&epic=mj200", publicKey)); !slices.Equal(got, []string{"dt-three"}) {
		t.Errorf("citing mj200 after the append: %v", got)
	}
	req := func(method, body string) response {
		return do(t, method, d.base+"/v1/items/dt-three/links", []byte(body), bearer(ingestKey)...)
	}
	if r := req(http.MethodDelete, `{"links": [{"type": "cites_precedent", "target": "mj200"}]}`); r.status != http.StatusOK {
		t.Fatalf("DELETE links: %d %s", r.status, r.body)
	}
	if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?preset=decision_traces_by_precedent&epic=mj200", publicKey)); len(got) != 0 {
		t.Errorf("citing mj200 after the removal: %v", got)
	}
	r = req(http.MethodDelete, `{"links": [{"type": "cites_precedent", "target": "mj200"}]}`)
	if e := checkErrorShape(t, r); e.Code != h4r.ENOTFOUND || e.Field != "links[0]" {
		t.Errorf("removing a link that is not there: %+v", e)
	}
	if r := req(http.MethodPost, `{"links": [{"type": "x", "target": "y"}]}`); r.status != http.StatusForbidden && r.status != http.StatusOK {
		t.Errorf("unexpected %d", r.status)
	}
	if r := do(t, http.MethodPost, d.base+"/v1/items/dt-three/links", []byte(`{"links": [{"type": "x", "target": "y"}]}`), bearer(publicKey)...); r.status != http.StatusForbidden {
		t.Errorf("a read key edited links: %d", r.status)
	}
	// An outcome event for dt-two shows in its file history.
	if r := post(t, d.base+"/v1/events", `{"id": "ev-two", "type": "subtask_outcome", "decision_id": "dt-two", "success": true, "duration_ms": 45000, "error_count": 0}`, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("event: %d %s", r.status, r.body)
	}
	a := getAnswer(t, d.base+"/v1/decision-traces?preset=file_assignment_history&file=src/auth.ts", publicKey)
	if o, _ := a.DecisionTraces[0]["outcome"].(map[string]any); o == nil || o["id"] != "ev-two" || o["success"] != true {
		t.Errorf("outcome = %v", a.DecisionTraces[0]["outcome"])
	}
}

// TestPrefetchAndEscalationOverHTTP: step 3 of the done-when (the three
// decisions citing mj100 come back as precedents for their area), and a
// precedent restricted to the ops group never reaches a public key,
// through either route.
func TestPrefetchAndEscalationOverHTTP(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	hidden := h4r.Item{ID: "org/repo@dead", Kind: "commit_trace", Text: "auth rate limiting with escalation",
		Content: map[string]any{"sha": "dead", "repo": "org/repo", "areas": []any{"pkg/auth"}, "status": "landed", "iterations": 4.0,
			"errors":      []any{map[string]any{"message": "test failure"}},
			"escalations": []any{map[string]any{"from_tier": 1.0, "to_tier": 2.0, "iteration": 2.0}}},
		Metadata: h4r.Metadata{Tags: []string{"pkg/auth"}, RestrictedToGroups: []string{"ops"}, Extra: map[string]any{"repo": "org/repo", "status": "landed"}}}
	if _, err := d.app.Store.Upsert(t.Context(), []h4r.Item{hidden}); err != nil {
		t.Fatal(err)
	}
	body := `{"repo": "org/repo", "areas": ["pkg/auth"], "recent_files": ["src/auth.ts"], "task_description": "OAuth refresh split"}`
	prefetch := func(key string) []string {
		r := post(t, d.base+"/v1/prefetch", body, bearer(key)...)
		if r.status != http.StatusOK {
			t.Fatalf("prefetch: %d %s", r.status, r.body)
		}
		var res struct {
			Precedents []struct {
				Trace       map[string]any `json:"trace"`
				Relevance   float64        `json:"relevance"`
				MatchReason string         `json:"match_reason"`
			} `json:"precedents"`
			Summary     string   `json:"summary"`
			Suggestions []string `json:"suggestions"`
		}
		if err := json.Unmarshal(r.body, &res); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range res.Precedents {
			ids = append(ids, p.Trace["id"].(string))
		}
		slices.Sort(ids)
		return ids
	}
	if got := prefetch(publicKey); !slices.Equal(got, []string{"dt-one", "dt-three", "dt-two"}) {
		t.Errorf("public prefetch: %v, want the three mj100 decisions", got)
	}
	if got := prefetch(restrictedKey); !slices.Contains(got, "org/repo@dead") || !slices.Contains(got, "dt-ops-only") {
		t.Errorf("ops prefetch: %v, want the restricted ones too", got)
	}
	esc := `{"repo": "org/repo", "area": "pkg/auth", "current_tier": 1, "iterations": 3, "errors": ["test failure"]}`
	r := post(t, d.base+"/v1/escalation", esc, bearer(publicKey)...)
	var hint struct {
		Recommendation struct {
			Action string `json:"action"`
		} `json:"recommendation"`
		Reasoning    string           `json:"reasoning"`
		SimilarCases []map[string]any `json:"similar_cases"`
	}
	if err := json.Unmarshal(r.body, &hint); err != nil || r.status != http.StatusOK {
		t.Fatalf("escalation: %d %s", r.status, r.body)
	}
	if len(hint.SimilarCases) != 0 || hint.Recommendation.Action != "continue" {
		t.Errorf("public escalation used the restricted trace: %s", r.body)
	}
	r = post(t, d.base+"/v1/escalation", esc, bearer(restrictedKey)...)
	if err := json.Unmarshal(r.body, &hint); err != nil || len(hint.SimilarCases) != 1 || hint.Recommendation.Action != "escalate" {
		t.Errorf("ops escalation: %s", r.body)
	}
	for _, tt := range []struct{ path, body, field string }{
		{"/v1/prefetch", `{"areas": ["pkg/auth"]}`, "repo"},
		{"/v1/prefetch", `{"repo": "r", "area": "typo"}`, "area"},
		{"/v1/escalation", `{"repo": "r", "area": "a", "task_type": "chore"}`, "task_type"},
		{"/v1/escalation", `{"repo": "r", "area": "a", "current_tier": "one"}`, "current_tier"},
	} {
		if e := checkErrorShape(t, post(t, d.base+tt.path, tt.body, bearer(publicKey)...)); e.Field != tt.field {
			t.Errorf("%s %s: field %q, want %q", tt.path, tt.body, e.Field, tt.field)
		}
	}
}
