package decision_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
)

// FuzzPrepare: any JSON an agent sends as a decision trace or event is
// either refused with an *h4r.Error naming a field, or becomes an item
// that passes item validation. Never a panic.
func FuzzPrepare(f *testing.F) {
	for _, seed := range []string{
		`{"decision_type":"file_assignment","agent_name":"a","project_key":"p","decision":{"files":["src/a.ts"]}}`,
		`{"decision_type":"review_approval","agent_name":"a","project_key":"p","decision":{"status":"needs_changes"},"alternatives":[{"option":"x","rejected_because":"y"}]}`,
		`{"decision_type":"decomposition_strategy","agent_name":"a","project_key":"p","decision":1,"precedent_cited":[{"epic_id":"mj100"}],"timestamp":"2026-01-01T00:00:00Z"}`,
		`{"decision_type":"x","alternatives":{"option":1}}`,
		`{"type":"subtask_outcome","decision_id":"dt-1","success":true}`,
		`{"decision_type":"decomposition_strategy","agent_name":"a","project_key":"p","decision":"{\"strategy\":\"file-based\"}","alternatives":"[{\"option\":\"feature-based\",\"rejected_because\":\"70%\"}]","precedent_cited":"[{\"epic_id\":\"mj100\"}]","outcome_event_id":42}`,
		`{"decision_type":"rollback_plan","agent_name":"a","project_key":"p","decision":"[1,","links":[{"linkType":"applies_pattern","entityId":"m","entityType":"memory"}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var tr decision.Trace
		if json.Unmarshal(b, &tr) == nil {
			p, err := decision.Prepare(tr, "", t0)
			if err != nil {
				var herr *h4r.Error
				if !errors.As(err, &herr) || herr.Code != h4r.EINVALID {
					t.Fatalf("Prepare error %v is not invalid_argument", err)
				}
			} else {
				it, err := p.Item()
				if err != nil {
					t.Fatal(err)
				}
				if err := it.Validate(""); err != nil {
					t.Fatalf("a prepared trace makes an invalid item: %v", err)
				}
			}
		}
		var ev decision.Event
		if json.Unmarshal(b, &ev) == nil {
			if e, err := decision.PrepareEvent(ev, "", t0); err == nil {
				if it, err := e.Item(); err != nil || it.Validate("") != nil {
					t.Fatalf("a prepared event makes an invalid item: %v", err)
				}
			}
		}
	})
}
