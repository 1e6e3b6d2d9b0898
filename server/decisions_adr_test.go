package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// adrTraces are decisions as the decision-trace format's own capture code
// writes them: the JSON columns as JSON text (JSON.stringify),
// outcome_event_id as an integer, and a decision type the format does not
// list.
const adrTraces = `{"decision_traces": [
 {"id": "dt-adr-1", "decision_type": "decomposition_strategy", "epic_id": "mj300", "agent_name": "coordinator", "project_key": "/repo",
  "decision": "{\"strategy\":\"file-based\"}",
  "inputs_gathered": "{\"cass_queries\":[],\"semantic_memory\":[]}",
  "alternatives": "[{\"option\":\"feature-based\",\"rejected_because\":\"70% failure rate\"}]",
  "precedent_cited": "[{\"epic_id\":\"mj100\",\"reason\":\"solved OAuth refresh same way\"}]",
  "outcome_event_id": 42, "timestamp": 1772366400000},
 {"id": "dt-adr-2", "decision_type": "rollback_plan", "epic_id": "mj300", "agent_name": "coordinator", "project_key": "/repo",
  "decision": {"plan": "revert the migration"}, "timestamp": 1772366500000,
  "links": [{"linkType": "applies_pattern", "entityId": "mem-rollback", "entityType": "memory", "context": "the rollback pattern"}]}
]}`

func TestDecisionTracesInTheADRsOwnShape(t *testing.T) {
	d := newDecisionStack(t)
	if r := post(t, d.base+"/v1/events", `{"id": "42", "type": "subtask_outcome", "success": true}`, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("event: %d %s", r.status, r.body)
	}
	if r := post(t, d.base+"/v1/decision-traces", adrTraces, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("recording the format's own payload: %d %s", r.status, r.body)
	}
	r := do(t, http.MethodGet, d.base+"/v1/decision-traces/dt-adr-1", nil, bearer(publicKey)...)
	if r.status != http.StatusOK {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	var wc struct {
		Trace   map[string]any `json:"trace"`
		Links   []struct{ EntityType, EntityID, LinkType string }
		Outcome map[string]any `json:"outcome"`
	}
	if err := json.Unmarshal(r.body, &wc); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ok   bool
	}{
		{"alternatives stored as a list", func() bool { l, _ := wc.Trace["alternatives"].([]any); return len(l) == 1 }()},
		{"precedent_cited stored as a list", func() bool { l, _ := wc.Trace["precedent_cited"].([]any); return len(l) == 1 }()},
		{"decision stored as an object", func() bool { m, _ := wc.Trace["decision"].(map[string]any); return m["strategy"] == "file-based" }()},
		{"outcome_event_id as its digits", wc.Trace["outcome_event_id"] == "42"},
		{"the outcome event attached", wc.Outcome != nil && wc.Outcome["id"] == "42"},
		{"the precedent linked", len(wc.Links) == 1 && wc.Links[0].EntityID == "mj100" && wc.Links[0].LinkType == "cites_precedent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Errorf("answer: %s", r.body)
			}
		})
	}
	if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?preset=decision_traces_by_precedent&epic=mj100", publicKey)); !slices.Equal(got, []string{"dt-adr-1"}) {
		t.Errorf("citing mj100: %v", got)
	}
	if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?preset=decisions_by_pattern&pattern=mem-rollback", publicKey)); !slices.Equal(got, []string{"dt-adr-2"}) {
		t.Errorf("a trace's link written with the entity names: %v", got)
	}
	if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?preset=decisions_by_epic&epic=mj300", publicKey)); !slices.Equal(got, []string{"dt-adr-2", "dt-adr-1"}) {
		t.Errorf("epic mj300 (with the new decision type): %v", got)
	}
}

func TestReviewDecisionsAndPatternUse(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	body := `{"decision_traces": [
	 {"id": "dt-rev-ok", "decision_type": "review_approval", "epic_id": "mj101", "agent_name": "reviewer", "project_key": "/repo",
	  "decision": "{\"status\":\"approved\",\"issues\":[]}", "timestamp": 1772366600000,
	  "links": [{"type": "applies_pattern", "target": "mem-oauth-buffer", "targetType": "memory"}]},
	 {"id": "dt-rev-no", "decision_type": "review_approval", "epic_id": "mj101", "agent_name": "reviewer", "project_key": "/repo",
	  "decision": {"status": "needs_changes", "issues": [{"file": "src/auth.ts", "line": 3, "issue": "race"}]}, "timestamp": 1772366700000},
	 {"id": "dt-rev-ops", "decision_type": "review_approval", "epic_id": "mj101", "agent_name": "reviewer", "project_key": "/repo",
	  "decision": {"status": "approved"}, "timestamp": 1772366800000, "metadata": {"restrictedToGroups": ["ops"]},
	  "links": [{"type": "applies_pattern", "target": "mem-oauth-buffer", "targetType": "memory"}]}
	]}`
	if r := post(t, d.base+"/v1/decision-traces", body, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatalf("recording: %d %s", r.status, r.body)
	}
	tests := []struct {
		name, query, key string
		want             []string
	}{
		{"all reviews", "preset=review_decisions", publicKey, []string{"dt-rev-no", "dt-rev-ok"}},
		{"approved reviews", "preset=review_decisions&status=approved", publicKey, []string{"dt-rev-ok"}},
		{"reviews for ops", "preset=review_decisions", restrictedKey, []string{"dt-rev-ops", "dt-rev-no", "dt-rev-ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?"+tt.query, tt.key)); !slices.Equal(got, tt.want) {
				t.Errorf("%v, want %v", got, tt.want)
			}
		})
	}
	uses := []struct {
		name, key, limit string
		want             int
	}{
		{"public key", publicKey, "", 2},
		{"public key, one asked for", publicKey, "&limit=1", 2},
		{"ops key", restrictedKey, "", 3},
	}
	for _, tt := range uses {
		t.Run("used in: "+tt.name, func(t *testing.T) {
			r := do(t, http.MethodGet, d.base+"/v1/decision-traces?preset=decisions_by_pattern&pattern=mem-oauth-buffer"+tt.limit, nil, bearer(tt.key)...)
			var a struct {
				Pattern *struct {
					ID     string `json:"id"`
					UsedIn int    `json:"used_in_decisions"`
				} `json:"pattern"`
			}
			if err := json.Unmarshal(r.body, &a); err != nil || a.Pattern == nil || a.Pattern.ID != "mem-oauth-buffer" || a.Pattern.UsedIn != tt.want {
				t.Errorf("%d %s, want used in %d", r.status, r.body, tt.want)
			}
		})
	}
}

// TestLinksReadBackInTheNamesWritten: the link routes take the decision
// traces' names too, and answer in the names the request used.
func TestLinksReadBackInTheNamesWritten(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	tests := []struct {
		name, method, body string
		want               []string
	}{
		{"append, entity names", http.MethodPost, `{"links": [{"linkType": "similar_to", "entityId": "mj500", "entityType": "epic", "context": "same shape"}]}`,
			[]string{"linkType", "entityId", "entityType", "context"}},
		{"remove, entity names", http.MethodDelete, `{"links": [{"linkType": "similar_to", "entityId": "mj500"}]}`,
			[]string{"linkType", "entityId", "entityType"}},
		{"append, item names", http.MethodPost, `{"links": [{"type": "similar_to", "target": "mj501", "targetType": "epic"}]}`,
			[]string{"type", "target", "targetType"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.method, d.base+"/v1/items/dt-three/links", []byte(tt.body), bearer(ingestKey)...)
			if r.status != http.StatusOK {
				t.Fatalf("%d %s", r.status, r.body)
			}
			var a struct {
				Links []map[string]any `json:"links"`
			}
			if err := json.Unmarshal(r.body, &a); err != nil || len(a.Links) == 0 {
				t.Fatalf("%s (%v)", r.body, err)
			}
			last := a.Links[len(a.Links)-1]
			for _, k := range tt.want {
				if _, ok := last[k]; !ok && k != "context" {
					t.Errorf("answer lacks %q: %s", k, r.body)
				}
			}
		})
	}
	it, err := d.app.Store.Get(t.Context(), "dt-three")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range it.Links {
		if l.Target == "mj500" {
			t.Errorf("mj500 still linked after its removal: %+v", it.Links)
		}
	}
	if got := answerIDs(getAnswer(t, d.base+"/v1/decision-traces?preset=decision_traces_by_precedent&epic=mj501", publicKey)); len(got) != 0 {
		t.Errorf("similar_to is no citation: %v", got)
	}
}
