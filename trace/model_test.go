package trace_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		change func(*trace.CommitTrace)
		field  string
	}{
		{"missing sha", func(c *trace.CommitTrace) { c.SHA = "" }, "sha"},
		{"sha not hex", func(c *trace.CommitTrace) { c.SHA = "zzzzzzzz" }, "sha"},
		{"sha too short", func(c *trace.CommitTrace) { c.SHA = "abc" }, "sha"},
		{"missing repo", func(c *trace.CommitTrace) { c.Repo = "" }, "repo"},
		{"repo without owner", func(c *trace.CommitTrace) { c.Repo = "gateway" }, "repo"},
		{"repo with two slashes", func(c *trace.CommitTrace) { c.Repo = "a/b/c" }, "repo"},
		{"repo with a space", func(c *trace.CommitTrace) { c.Repo = "acme/gate way" }, "repo"},
		{"missing timestamp", func(c *trace.CommitTrace) { c.Timestamp = time.Time{} }, "timestamp"},
		{"unknown mode", func(c *trace.CommitTrace) { c.Mode = "turbo" }, "mode"},
		{"unknown status", func(c *trace.CommitTrace) { c.Status = "merged" }, "status"},
		{"empty area", func(c *trace.CommitTrace) { c.Areas = []string{"pkg/auth", " "} }, "areas[1]"},
		{"negative iterations", func(c *trace.CommitTrace) { c.Iterations = -1 }, "iterations"},
		{"decision without context", func(c *trace.CommitTrace) { c.Decisions[1].Context = "" }, "decisions[1].context"},
		{"selected past the options", func(c *trace.CommitTrace) { c.Decisions[0].Selected = 2 }, "decisions[0].selected"},
		{"confidence above one", func(c *trace.CommitTrace) { c.Decisions[0].Confidence = 1.5 }, "decisions[0].confidence"},
		{"unknown category", func(c *trace.CommitTrace) { c.Decisions[1].Category = "vibes" }, "decisions[1].category"},
		{"unknown risk", func(c *trace.CommitTrace) { c.Decisions[0].Risk = "extreme" }, "decisions[0].risk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := fixture(t)
			tc.change(tr)
			tr.Normalize()
			err := tr.Validate()
			var e *h4r.Error
			if !asError(err, &e) || e.Code != h4r.EINVALID || e.Field != tc.field {
				t.Fatalf("Validate() = %v, want invalid_argument on %s", err, tc.field)
			}
		})
	}
	tr := fixture(t)
	tr.Normalize()
	if err := tr.Validate(); err != nil {
		t.Fatalf("the fixture is valid, got %v", err)
	}
}

func asError(err error, target **h4r.Error) bool {
	e, ok := err.(*h4r.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestDecodeNamesUnknownField(t *testing.T) {
	_, err := trace.Decode([]byte(`{"sha":"abcdef1","repo":"a/b","decisions":[{"context":"x","confidnce":0.5}]}`))
	var e *h4r.Error
	if !asError(err, &e) || e.Field != "decisions[0].confidnce" {
		t.Fatalf("Decode = %v, want an error on decisions[0].confidnce", err)
	}
}

func TestItemsMapTraceAndDecisions(t *testing.T) {
	tr := fixture(t)
	tr.Normalize()
	tr.Summary = "Rate limiting in the auth middleware"
	items, err := trace.Items(tr)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("%d items, want the trace and its 2 decisions", len(items))
	}
	ti := items[0]
	wantID := "acme/gateway@9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d"
	if ti.ID != wantID || ti.Kind != "commit_trace" || ti.Text != tr.Summary {
		t.Fatalf("trace item %s kind %s text %q", ti.ID, ti.Kind, ti.Text)
	}
	if !ti.Metadata.CreatedAt.Equal(tr.Timestamp) {
		t.Errorf("createdAt %v, want the trace's timestamp %v", ti.Metadata.CreatedAt, tr.Timestamp)
	}
	if !reflect.DeepEqual(ti.Metadata.Tags, []string{"pkg/auth", "pkg/ratelimit"}) {
		t.Errorf("tags %v, want the areas", ti.Metadata.Tags)
	}
	for key, want := range map[string]string{"repo": "acme/gateway", "branch": "feature/auth-ratelimit", "author": "dev@acme.example", "mode": "classic", "status": "pending"} {
		if ti.Metadata.Extra[key] != want {
			t.Errorf("metadata.%s = %v, want %s", key, ti.Metadata.Extra[key], want)
		}
	}
	if ti.Metadata.TrustValue() != trace.TrustPending {
		t.Errorf("trust %v, want %v", ti.Metadata.TrustValue(), trace.TrustPending)
	}
	if err := ti.Validate(""); err != nil {
		t.Fatalf("the trace item is not a valid item: %v", err)
	}
	back, err := trace.FromItem(&ti)
	if err != nil {
		t.Fatal(err)
	}
	if back.SHA != tr.SHA || len(back.Decisions) != 2 || back.Duration != 1380*time.Second || back.ModelCalls[0].Tokens.Cached != 9000 || back.Files[2].OldPath != "pkg/auth/throttle.go" {
		t.Fatalf("the content does not hold the trace: %+v", back)
	}
	if back.ID == "" || back.Decisions[0].TraceID != back.ID || back.Decisions[0].ID == back.Decisions[1].ID {
		t.Errorf("ids not filled: trace %q decisions %q %q (trace_id %q)", back.ID, back.Decisions[0].ID, back.Decisions[1].ID, back.Decisions[0].TraceID)
	}
	for i, d := range items[1:] {
		if d.Kind != "decision" || d.ID != trace.DecisionItemID(wantID, i) {
			t.Errorf("decision %d: id %s kind %s", i, d.ID, d.Kind)
		}
		if len(d.Links) != 1 || d.Links[0].Target != wantID || d.Links[0].Type != trace.LinkPartOf {
			t.Errorf("decision %d links %v, want part_of %s", i, d.Links, wantID)
		}
		if d.Metadata.Extra["repo"] != "acme/gateway" || d.Metadata.Extra["status"] != "pending" {
			t.Errorf("decision %d metadata %v lacks the trace's filters", i, d.Metadata.Extra)
		}
		if err := d.Validate(""); err != nil {
			t.Errorf("decision %d is not a valid item: %v", i, err)
		}
	}
	if !strings.Contains(items[1].Text, "Token bucket per API key in Redis") {
		t.Errorf("decision text %q lacks the chosen option", items[1].Text)
	}
	// The document's names on the wire.
	b, _ := json.Marshal(tr)
	for _, name := range []string{`"tool_calls"`, `"model_calls"`, `"tokens_used"`, `"old_path"`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("the JSON lacks %s", name)
		}
	}
}

func TestItemsIDsAreDeterministic(t *testing.T) {
	a, b := fixture(t), fixture(t)
	a.Normalize()
	b.Normalize()
	ia, _ := trace.Items(a)
	ib, _ := trace.Items(b)
	if ia[0].Content["id"] != ib[0].Content["id"] {
		t.Fatalf("two replicas derive different trace ids: %v and %v", ia[0].Content["id"], ib[0].Content["id"])
	}
}

func TestFallbackSummary(t *testing.T) {
	cases := []struct {
		name string
		tr   trace.CommitTrace
		want string
	}{
		{"areas decisions and lines", trace.CommitTrace{Areas: []string{"pkg/auth", "cmd/server"}, Decisions: make([]trace.Decision, 3), Stats: trace.DiffStats{Insertions: 10, Deletions: 2}},
			"Changes to pkg/auth, cmd/server. 3 decisions made. +10/-2 lines"},
		{"deletions only", trace.CommitTrace{Stats: trace.DiffStats{Deletions: 5}}, "+0/-5 lines"},
		{"nothing structured", trace.CommitTrace{SHA: "abcdef1", Repo: "a/b"}, "Commit abcdef1 in a/b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := trace.FallbackSummary(&tc.tr); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
