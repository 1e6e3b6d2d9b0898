package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/decision"
)

// TestQueryPresets records decisions through app.Decisions, then asks
// the presets of docs/decisions.md from the command line.
func TestQueryPresets(t *testing.T) {
	dir := t.TempDir()
	vars := env(map[string]string{"H4R_DATA_DIR": dir, "H4R_LOG_LEVEL": "error"})
	cfg, err := app.LoadConfig(vars)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var traces []decision.Trace
	if err := json.Unmarshal([]byte(`[
	 {"id": "dt-a", "decision_type": "decomposition_strategy", "epic_id": "mj101", "agent_name": "coordinator", "project_key": "/r",
	  "decision": {"strategy": "file-based"}, "rationale": "feature-based failed", "timestamp": 1000,
	  "alternatives": [{"option": "feature-based", "rejected_because": "70% failure rate"}], "precedent_cited": [{"epic_id": "mj100"}]},
	 {"id": "dt-b", "decision_type": "file_assignment", "agent_name": "coordinator", "project_key": "/r", "timestamp": 2000,
	  "decision": {"files": ["src/auth.ts"], "assigned_to": "w1"}},
	 {"id": "dt-c", "decision_type": "review_approval", "agent_name": "reviewer", "project_key": "/r", "timestamp": 3000,
	  "decision": {"status": "needs_changes"}},
	 {"id": "dt-d", "decision_type": "review_approval", "agent_name": "reviewer", "project_key": "/r", "timestamp": 4000,
	  "decision": {"status": "needs_changes"}, "metadata": {"restrictedToGroups": ["ops"]}}]`), &traces); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Decisions.RecordTraces(context.Background(), traces, "decision_traces", false); err != nil {
		t.Fatal(err)
	}
	a.Close()
	tests := []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"by precedent", []string{"--preset", "decision_traces_by_precedent", "--epic", "mj100"}, []string{"dt-a", "rejected: feature-based (70% failure rate)"}, []string{"dt-b"}},
		{"file history", []string{"--preset", "file_assignment_history", "--file", "src/auth.ts"}, []string{"dt-b", "outcome: null"}, []string{"dt-a"}},
		{"reviews rejected, public", []string{"--preset", "review_decisions_rejected"}, []string{"dt-c", "1 withheld by policy"}, []string{"dt-d"}},
		{"reviews rejected, ops", []string{"--preset", "review_decisions_rejected", "--specialist", "lead", "--level", "restricted", "--groups", "ops"}, []string{"dt-c", "dt-d"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), append([]string{"query"}, tt.args...), nil, &stdout, &stderr, vars); err != nil {
				t.Fatalf("query: %v (%s)", err, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, n := range tt.not {
				if strings.Contains(stdout.String(), n) {
					t.Errorf("output has %q:\n%s", n, stdout.String())
				}
			}
		})
	}
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"query", "--preset", "file_assignment_history"}, nil, &stdout, &stderr, vars)
	if err == nil || !strings.Contains(err.Error(), "--file") || exitCode(err) != 2 {
		t.Errorf("a preset without its parameter: %v", err)
	}
}
