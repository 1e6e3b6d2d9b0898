package mcptools_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/mcptools"
	"github.com/h4r/h4r/trace"
)

// TestSearchTracesAndPrecedentsPassPolicy: search_traces finds an open
// commit trace and never a trace restricted to a group the caller is not
// in; precedents answers a preset and names a missing argument.
func TestSearchTracesAndPrecedentsPassPolicy(t *testing.T) {
	ctx := context.Background()
	a := openApp(t)
	body, err := os.ReadFile("../trace/testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	svc := trace.NewService(a.Store, trace.WithSearch(a.Engine, a.Slicer))
	for _, v := range []struct {
		sha, summary string
		groups       []string
	}{
		{"1111111111111111111111111111111111111111", "Rate limiting in the auth middleware, open", nil},
		{"2222222222222222222222222222222222222222", "Rate limiting in the auth middleware, hunter2 incident", []string{"ops"}},
	} {
		tr, err := trace.Decode(body)
		if err != nil {
			t.Fatal(err)
		}
		tr.SHA, tr.Summary, tr.RestrictedToGroups = v.sha, v.summary, v.groups
		if _, err := svc.Ingest(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	r := mcptools.NewRegistry("h4r", "test")
	mcptools.AddTraces(r, svc, a.Decisions)
	cs := connect(t, r, publicCaller())

	text, isErr := call(t, cs, "search_traces", map[string]any{"query": "rate limiting auth middleware", "limit": 100})
	if isErr {
		t.Fatalf("search_traces: %s", text)
	}
	if !strings.Contains(text, "1111111111111111111111111111111111111111") {
		t.Errorf("search_traces did not find the open trace: %s", text)
	}
	if strings.Contains(text, "hunter2") || strings.Contains(text, "2222222222222222222222222222222222222222") {
		t.Errorf("search_traces delivered the ops-only trace to a public caller: %s", text)
	}
	tests := []struct {
		name    string
		args    map[string]any
		wantErr string
	}{
		{"preset answers", map[string]any{"preset": "decision_traces_by_precedent", "epic": "mj100"}, ""},
		{"missing epic", map[string]any{"preset": "decision_traces_by_precedent"}, "epic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := call(t, cs, "precedents", tt.args)
			if tt.wantErr == "" && isErr {
				t.Fatalf("precedents: %s", text)
			}
			if tt.wantErr != "" && (!isErr || !strings.Contains(text, tt.wantErr)) {
				t.Fatalf("precedents: error %v %s, want one naming %s", isErr, text, tt.wantErr)
			}
		})
	}
}

// TestSearchTracesBadArguments: a value the input schema lets through but
// the Go type refuses (a date that is no RFC 3339 time) is a tool error in
// the error shape naming the argument, as POST /v1/search answers it, not
// encoding/json's message.
func TestSearchTracesBadArguments(t *testing.T) {
	a := openApp(t)
	r := mcptools.NewRegistry("h4r", "test")
	mcptools.AddTraces(r, trace.NewService(a.Store, trace.WithSearch(a.Engine, a.Slicer)), a.Decisions)
	cs := connect(t, r, publicCaller())
	tests := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"since a date without a time", map[string]any{"query": "q", "filters": map[string]any{"since": "2026-01-01"}}, "filters.since"},
		{"since not a time", map[string]any{"query": "q", "filters": map[string]any{"since": "yesterday"}}, "filters.since"},
		{"since of the wrong type", map[string]any{"query": "q", "filters": map[string]any{"since": 5}}, "filters.since"},
		{"unknown filter", map[string]any{"query": "q", "filters": map[string]any{"branch": "main"}}, "filters.branch"},
		{"missing query", map[string]any{}, "query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := call(t, cs, "search_traces", tt.args)
			var body struct {
				Error *h4r.Error `json:"error"`
			}
			if !isErr || json.Unmarshal([]byte(text), &body) != nil || body.Error == nil ||
				body.Error.Code != h4r.EINVALID || body.Error.Field != tt.field {
				t.Errorf("search_traces(%v) = %s (isError %v), want invalid_argument naming %s", tt.args, text, isErr, tt.field)
			}
		})
	}
}
