package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
)

// sameAnswer fails unless two answers are the same byte for byte, once
// each one's id is replaced by ID: a caller must not tell a hidden item
// from a missing one.
func sameAnswer(t *testing.T, hidden, missing response, hiddenID, missingID string) {
	t.Helper()
	h := bytes.ReplaceAll(hidden.body, []byte(hiddenID), []byte("ID"))
	m := bytes.ReplaceAll(missing.body, []byte(missingID), []byte("ID"))
	if hidden.status != missing.status || !bytes.Equal(h, m) {
		t.Errorf("hidden: %d %s\nmissing: %d %s", hidden.status, hidden.body, missing.status, missing.body)
	}
	if e := checkErrorShape(t, missing); e.Code != h4r.ENOTFOUND {
		t.Errorf("missing: %+v, want not_found", e)
	}
}

// TestHiddenDecisionIsMissing: GET /v1/decision-traces/{id} answers a
// decision the key may not see exactly as one that does not exist.
func TestHiddenDecisionIsMissing(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	get := func(id string) response {
		return do(t, http.MethodGet, d.base+"/v1/decision-traces/"+id, nil, bearer(publicKey)...)
	}
	sameAnswer(t, get("dt-ops-only"), get("dt-missing1"), "dt-ops-only", "dt-missing1")
}

// TestLinkEditsOnlySeeVisibleItems: editing the links of an item the key
// may not see is not_found, as for a missing item, and changes nothing;
// the links an edit answers with leave out those to hidden items.
func TestLinkEditsOnlySeeVisibleItems(t *testing.T) {
	d := newDecisionStack(t)
	recordMJ100(t, d)
	edit := func(method, id, body string) response {
		return do(t, method, d.base+"/v1/items/"+id+"/links", []byte(body), bearer(ingestKey)...)
	}
	body := `{"links": [{"type": "similar_to", "target": "mj9", "targetType": "epic"}]}`
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		t.Run(method+" on a hidden item", func(t *testing.T) {
			sameAnswer(t, edit(method, "dt-ops-only", body), edit(method, "dt-missing1", body), "dt-ops-only", "dt-missing1")
			if it, err := d.app.Store.Get(t.Context(), "dt-ops-only"); err != nil || it.Metadata.Version != 1 {
				t.Errorf("the hidden item was edited: %+v %v", it, err)
			}
		})
	}
	t.Run("links to hidden items are not echoed", func(t *testing.T) {
		r := edit(http.MethodPost, "dt-three", `{"links": [{"type": "learned_from", "target": "dt-ops-only", "targetType": "decision"},
			{"type": "learned_from", "target": "dt-one", "targetType": "decision"}]}`)
		var got struct {
			Links []h4r.Link `json:"links"`
		}
		if err := json.Unmarshal(r.body, &got); err != nil || r.status != http.StatusOK {
			t.Fatalf("POST links: %d %s", r.status, r.body)
		}
		targets := func(links []h4r.Link) []string {
			var out []string
			for _, l := range links {
				out = append(out, l.Target)
			}
			return out
		}
		if ts := targets(got.Links); slices.Contains(ts, "dt-ops-only") || !slices.Contains(ts, "dt-one") {
			t.Errorf("answered links to %v: want dt-one and never dt-ops-only", ts)
		}
		if it, err := d.app.Store.Get(t.Context(), "dt-three"); err != nil || !slices.Contains(targets(it.Links), "dt-ops-only") {
			t.Errorf("the link to the hidden decision was not stored: %v", err)
		}
	})
}

// TestLinkEditsOfARedactedItem: the links an edit of a PII item answers
// with are read from its redacted copy: a cited precedent's reason (a link
// context) is the marker, in the answer to adding a link and to removing
// one alike.
func TestLinkEditsOfARedactedItem(t *testing.T) {
	d := newDecisionStack(t)
	r := post(t, d.base+"/v1/decision-traces", `{"decision_traces": [{"id": "dt-pii", "decision_type": "decomposition_strategy", "agent_name": "c",
		"project_key": "/repo", "decision": {"strategy": "file-based"}, "rationale": "split the workers",
		"precedent_cited": [{"epic_id": "mj9", "reason": "Maria Rossi in Zanzibar asked for it"}], "timestamp": 1772366400000,
		"metadata": {"containsPII": true}}]}`, bearer(ingestKey)...)
	if r.status != http.StatusOK {
		t.Fatalf("recording: %d %s", r.status, r.body)
	}
	link := `{"links": [{"type": "similar_to", "target": "mj1", "targetType": "epic"}]}`
	for _, method := range []string{http.MethodPost, http.MethodDelete} {
		t.Run(method, func(t *testing.T) {
			r := do(t, method, d.base+"/v1/items/dt-pii/links", []byte(link), bearer(ingestKey)...)
			var got struct {
				Links []h4r.Link `json:"links"`
			}
			if err := json.Unmarshal(r.body, &got); err != nil || r.status != http.StatusOK {
				t.Fatalf("%s links: %d %s", method, r.status, r.body)
			}
			if strings.Contains(string(r.body), "Rossi") || len(got.Links) == 0 || got.Links[0].Context != h4r.RedactionMarker {
				t.Errorf("%s links answered %s: want the precedent's context redacted", method, r.body)
			}
		})
	}
}

// TestPushOverWebSocketIsRedacted: a decision trace whose rationale is PII
// reaches a subscriber over /v1/subscribe with the rationale redacted in
// the trace, the trigger and the suggestion alike, though the session's
// task names the rationale's words.
func TestPushOverWebSocketIsRedacted(t *testing.T) {
	d := newAmbientStack(t, decision.WithPushDebounce(0), decision.WithPushThreshold(0.5))
	c, err := wsDial(t, d.base, "s1", publicKey)
	if err != nil {
		t.Fatal(err)
	}
	wsSend(t, c, `{"type": "context_update", "repo": "/repo", "areas": ["pkg/auth"], "current_task": "ask Rossi in Zanzibar about workers"}`)
	if m := next(t, c, time.Second); m != nil {
		t.Fatalf("push with nothing stored: %v", m)
	}
	pii := `{"id": "dt-pii", "decision_type": "file_assignment", "agent_name": "c", "project_key": "/repo", "decision": {"files": ["a"]},
		"rationale": "Maria Rossi in Zanzibar split the workers",
		"metadata": {"tags": ["pkg/auth"], "containsPII": true, "piiFields": ["$.content.rationale"]}}`
	if r := post(t, d.base+"/v1/decision-traces", pii, bearer(ingestKey)...); r.status != http.StatusOK {
		t.Fatal(string(r.body))
	}
	m := next(t, c, 10*time.Second)
	if m == nil || m["trace"].(map[string]any)["id"] != "dt-pii" {
		t.Fatalf("after ingest: %v, want dt-pii", m)
	}
	b, _ := json.Marshal(m)
	for _, secret := range []string{"rossi", "zanzibar"} {
		if bytes.Contains(bytes.ToLower(b), []byte(secret)) {
			t.Errorf("the push names %q, which only the redacted rationale holds: %s", secret, b)
		}
	}
	if s, _ := m["suggestion"].(string); !strings.Contains(s, h4r.RedactionMarker) {
		t.Errorf("suggestion %q, want the redacted rationale", s)
	}
	// So does a prefetch: its match reasons are measured on the redacted
	// trace.
	r := post(t, d.base+"/v1/prefetch", `{"repo": "/repo", "areas": ["pkg/auth"], "task_description": "Rossi Zanzibar"}`, bearer(publicKey)...)
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("dt-pii")) {
		t.Fatalf("prefetch: %d %s, want dt-pii", r.status, r.body)
	}
	for _, secret := range []string{"rossi", "zanzibar"} {
		if bytes.Contains(bytes.ToLower(r.body), []byte(secret)) {
			t.Errorf("the prefetch names %q, which only the redacted rationale holds: %s", secret, r.body)
		}
	}
}
