package decision_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
)

// ct describes a generated commit trace, an item of the shape the trace
// ingest writes (id {repo}@{sha}, text the summary, content the trace with
// the trace wire format's names, repo/branch/author/mode/status metadata, areas as
// tags, createdAt the timestamp).
type ct struct {
	sha, summary, status string
	areas, files         []string
	errors               []string
	escalateAt           int // 0: no escalation; else the iteration it escalated 1→2 at
	iterations           int
	daysAgo              int
	groups               []string
	taskType             string
}

func (c ct) item(repo string) h4r.Item {
	files := []any{}
	for _, f := range c.files {
		files = append(files, map[string]any{"path": f, "status": "M"})
	}
	errs := []any{}
	for i, e := range c.errors {
		errs = append(errs, map[string]any{"id": fmt.Sprint(i), "message": e, "iterations": 1})
	}
	esc := []any{}
	if c.escalateAt > 0 {
		esc = append(esc, map[string]any{"from_tier": 1.0, "to_tier": 2.0, "reason": "stuck", "iteration": float64(c.escalateAt)})
	}
	areas := []any{}
	for _, a := range c.areas {
		areas = append(areas, a)
	}
	ts := t0.AddDate(0, 0, -c.daysAgo)
	// The trace's own id is its item id here, so that tests name a
	// precedent by either; TestTraceIdentityIsTheUUID uses the real ingest.
	content := map[string]any{"id": repo + "@" + c.sha, "sha": c.sha, "repo": repo, "branch": "main", "author": "dev", "timestamp": ts.Format(time.RFC3339),
		"files": files, "areas": areas, "errors": errs, "escalations": esc, "iterations": float64(c.iterations), "mode": "rlm",
		"status": c.status, "summary": c.summary, "decisions": []any{}}
	md := h4r.Metadata{CreatedAt: ts, Tags: c.areas, RestrictedToGroups: c.groups,
		Extra: map[string]any{"repo": repo, "branch": "main", "author": "dev", "mode": "rlm", "status": c.status}}
	if c.taskType != "" {
		content["task_type"] = c.taskType
	}
	return h4r.Item{ID: repo + "@" + c.sha, Kind: decision.KindCommitTrace, Text: c.summary, Content: content, Metadata: md}
}

func (r *rig) traces(t *testing.T, repo string, cs ...ct) {
	t.Helper()
	items := make([]h4r.Item, len(cs))
	for i, c := range cs {
		items[i] = c.item(repo)
	}
	if _, err := r.store.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
}

func TestPrefetch(t *testing.T) {
	r := newRig(t)
	r.traces(t, "org/repo",
		ct{sha: "a1", summary: "Add token bucket rate limiting to auth middleware", status: "landed", areas: []string{"pkg/auth"}, files: []string{"pkg/auth/middleware.go"}, daysAgo: 3},
		ct{sha: "a2", summary: "Refactor auth handler errors", status: "reverted", areas: []string{"pkg/auth"}, files: []string{"pkg/auth/handler.go"}, daysAgo: 5},
		ct{sha: "a3", summary: "Auth session fix", status: "reverted", areas: []string{"pkg/auth"}, daysAgo: 10},
		ct{sha: "b1", summary: "Billing invoices rate limiting", status: "landed", areas: []string{"pkg/billing"}, daysAgo: 1},
		ct{sha: "s1", summary: "Rotate auth signing keys after incident rate limiting", status: "landed", areas: []string{"pkg/auth"}, files: []string{"pkg/auth/middleware.go"}, daysAgo: 2, groups: []string{"security"}},
	)
	r.traces(t, "org/other", ct{sha: "o1", summary: "auth rate limiting elsewhere", status: "landed", areas: []string{"pkg/auth"}, daysAgo: 1})
	req := decision.PrefetchRequest{Repo: "org/repo", Areas: []string{"pkg/auth"}, RecentFiles: []string{"pkg/auth/middleware.go"},
		TaskDescription: "Add rate limiting to auth endpoints"}
	res, err := r.svc.Prefetch(t.Context(), public(), req)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range res.Precedents {
		ids = append(ids, p.Trace["id"].(string))
	}
	if want := "org/repo@a1,org/repo@a2,org/repo@a3,org/repo@b1"; strings.Join(ids, ",") != want {
		t.Errorf("precedents %v, want %s", ids, want)
	}
	top := res.Precedents[0]
	if top.Relevance < 0.9 || !strings.Contains(top.MatchReason, "same area pkg/auth") || !strings.Contains(top.MatchReason, "touched pkg/auth/middleware.go") {
		t.Errorf("top precedent relevance %v, reason %q", top.Relevance, top.MatchReason)
	}
	if !strings.Contains(strings.Join(res.Suggestions, "|"), "pkg/auth was reverted 2 times in the last 30 days") {
		t.Errorf("suggestions %q", res.Suggestions)
	}
	if !strings.HasPrefix(res.Summary, "Found 4 relevant traces.") || !strings.Contains(res.Summary, "[org/repo@a1]") {
		t.Errorf("summary %q", res.Summary)
	}
	// The security group sees its trace, first (area, file and words).
	res, err = r.svc.Prefetch(t.Context(), member(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Precedents) != 5 {
		t.Errorf("security member got %d precedents, want 5", len(res.Precedents))
	}
	for _, bad := range []struct {
		req   decision.PrefetchRequest
		field string
	}{{decision.PrefetchRequest{}, "repo"}, {decision.PrefetchRequest{Repo: "r", Limit: 1000}, "limit"}} {
		if _, err := r.svc.Prefetch(t.Context(), public(), bad.req); h4r.ErrorCode(err) != h4r.EINVALID || err.(*h4r.Error).Field != bad.field {
			t.Errorf("%+v: %v, want invalid_argument on %s", bad.req, err, bad.field)
		}
	}
}

// history generates n traces in pkg/auth with test failures: escalated of
// them escalated 1→2 at iteration 3 and escalatedOK of those landed;
// of the others, stayedOK landed. Landed traces took 4 iterations.
func history(escalated, escalatedOK, stayed, stayedOK int) []ct {
	var out []ct
	for i := range escalated + stayed {
		c := ct{sha: fmt.Sprintf("h%02d", i), summary: "fix auth tests", areas: []string{"pkg/auth"},
			errors: []string{"test failure in TestLogin", "context deadline exceeded"}, iterations: 4, status: "reverted", daysAgo: i, taskType: "bug_fix"}
		if i < escalated {
			c.escalateAt = 3
			if i < escalatedOK {
				c.status = "landed"
			}
		} else if i-escalated < stayedOK {
			c.status = "landed"
		}
		out = append(out, c)
	}
	return out
}

func TestEscalation(t *testing.T) {
	ask := decision.EscalationRequest{Repo: "org/repo", Area: "pkg/auth", CurrentTier: 1, Iterations: 3,
		Errors: []string{"context deadline exceeded", "test failure"}, TaskType: "bug_fix"}
	tests := []struct {
		name       string
		history    []ct
		req        decision.EscalationRequest
		action     string
		target     int
		minConf    float64
		maxConf    float64
		cases      int
		reasonPart string
	}{
		{"escalation resolved most cases", history(6, 5, 4, 1), ask, decision.ActionEscalate, 2, 0.5, 1, 10, "escalated from tier 1→2 after avg 3.0 iterations"},
		{"staying resolved most cases", history(3, 1, 8, 7), ask, decision.ActionContinue, 1, 0.5, 1, 10, "staying at tier 1 resolved 88% of 8"},
		{"nothing worked", history(4, 0, 4, 0), ask, decision.ActionAskUser, 1, 0.3, 1, 8, "Ask the user"},
		{"no history", nil, ask, decision.ActionContinue, 1, 0, 0.2, 0, "No recorded history"},
		{"unlike errors are no history", history(6, 5, 4, 1), decision.EscalationRequest{Repo: "org/repo", Area: "pkg/auth", CurrentTier: 1,
			Errors: []string{"postgres unique violation"}}, decision.ActionContinue, 1, 0, 0.2, 0, "No recorded history"},
		{"another task type is no history", history(6, 5, 4, 1), decision.EscalationRequest{Repo: "org/repo", Area: "pkg/auth", CurrentTier: 1,
			TaskType: "feature"}, decision.ActionContinue, 1, 0, 0.2, 0, "No recorded history"},
		{"another area is no history", history(6, 5, 4, 1), decision.EscalationRequest{Repo: "org/repo", Area: "pkg/billing", CurrentTier: 1}, decision.ActionContinue, 1, 0, 0.2, 0, "No recorded history"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if len(tt.history) > 0 {
				r.traces(t, "org/repo", tt.history...)
			}
			h, err := r.svc.Escalation(t.Context(), public(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			rec := h.Recommendation
			if rec.Action != tt.action || rec.TargetTier != tt.target || rec.Confidence < tt.minConf || rec.Confidence > tt.maxConf {
				t.Errorf("recommendation %+v, want %s to %d with confidence in [%v, %v]", rec, tt.action, tt.target, tt.minConf, tt.maxConf)
			}
			if len(h.SimilarCases) != tt.cases || !strings.Contains(h.Reasoning, tt.reasonPart) {
				t.Errorf("%d cases, reasoning %q; want %d and %q", len(h.SimilarCases), h.Reasoning, tt.cases, tt.reasonPart)
			}
		})
	}
}

// TestEscalationNeverUsesHiddenTraces: traces the caller may not see
// neither appear among the cases nor sway the recommendation.
func TestEscalationNeverUsesHiddenTraces(t *testing.T) {
	r := newRig(t)
	hidden := history(6, 6, 0, 0)
	for i := range hidden {
		hidden[i].groups = []string{"security"}
	}
	r.traces(t, "org/repo", hidden...)
	req := decision.EscalationRequest{Repo: "org/repo", Area: "pkg/auth", CurrentTier: 1, Errors: []string{"test failure"}}
	h, err := r.svc.Escalation(t.Context(), public(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.SimilarCases) != 0 || h.Recommendation.Action != decision.ActionContinue {
		t.Errorf("public caller: %+v", h)
	}
	h, err = r.svc.Escalation(t.Context(), member(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.SimilarCases) != 6 || h.Recommendation.Action != decision.ActionEscalate {
		t.Errorf("security member: %+v", h.Recommendation)
	}
}
