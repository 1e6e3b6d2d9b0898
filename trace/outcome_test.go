package trace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

// prMerged is a merged pull request of acme/gateway from head into base,
// whose default branch is main.
func prMerged(t *testing.T, number int, head, headSHA, base string) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"action": "closed", "number": number,
		"pull_request": map[string]any{
			"merged": true, "merged_at": "2026-11-21T09:00:00Z",
			"head": map[string]any{"ref": head, "sha": headSHA},
			"base": map[string]any{"ref": base},
		},
		"repository": map[string]any{"full_name": "acme/gateway", "default_branch": "main"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func status(t *testing.T, h *harness, repo, sha string) string {
	t.Helper()
	s, _ := h.item(t, trace.ItemID(repo, sha)).Metadata.Extra["status"].(string)
	return s
}

// TestOutcomeBeforeItsTrace: a signed push to main names a commit whose
// trace arrives afterwards; the trace lands when it arrives, and a revert
// recorded before it too.
func TestOutcomeBeforeItsTrace(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	tr := fixture(t)
	push := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%s","repository":{"full_name":%q,"default_branch":"main"},"commits":[{"id":%q,"timestamp":"2026-11-21T08:00:00Z"}]}`, tr.SHA, tr.Repo, tr.SHA)
	res, err := h.svc.HandleGitHub(ctx, "push", "early-1", push)
	if err != nil {
		t.Fatal(err)
	}
	if res.TracesUpdated != 0 {
		t.Errorf("traces_updated %d before any trace, want 0", res.TracesUpdated)
	}
	stored := h.ingest(t, tr)
	if stored.Status != trace.StatusLanded || stored.LandedAt == nil || stored.MergedVia == nil || *stored.MergedVia != tr.SHA {
		t.Fatalf("trace ingested after its push: status %s landed_at %v merged_via %v, want landed by the push", stored.Status, stored.LandedAt, stored.MergedVia)
	}
	if got := status(t, h, tr.Repo, tr.SHA); got != "landed" {
		t.Errorf("stored status %q, want landed", got)
	}
	if _, err := h.app.Store.Get(ctx, trace.EarlyOutcomeItemID(tr.Repo, tr.SHA)); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("the waiting outcome was kept after its trace took it: %v", err)
	}

	// A revert of a commit not traced yet, then its trace.
	other := fixture(t)
	other.SHA = "1111111111111111111111111111111111111111"
	revert := fmt.Appendf(nil, `{"ref":"refs/heads/main","after":"%040x","repository":{"full_name":%q,"default_branch":"main"},"commits":[{"id":"%040x","message":"Revert\n\nThis reverts commit %s."}]}`, 2, other.Repo, 2, other.SHA)
	if _, err := h.svc.HandleGitHub(ctx, "push", "early-2", revert); err != nil {
		t.Fatal(err)
	}
	if got := h.ingest(t, other); got.Status != trace.StatusReverted {
		t.Errorf("trace ingested after its revert: status %s, want reverted", got.Status)
	}
}

// TestOnlyMergesIntoLandingBranchesLand: a pull request merged into
// release/experimental leaves its trace pending; one merged into the
// default branch, or into a configured landing branch, lands it.
func TestOnlyMergesIntoLandingBranchesLand(t *testing.T) {
	tests := []struct {
		name    string
		base    string
		landing []string
		want    string
	}{
		{"experimental branch", "release/experimental", nil, "pending"},
		{"default branch", "main", nil, "landed"},
		{"configured landing branch", "release/2.x", []string{"release/2.x"}, "landed"},
		{"another branch besides a configured one", "release/experimental", []string{"release/2.x"}, "pending"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, trace.WithLandingBranches(tc.landing...))
			tr := h.ingest(t, fixture(t))
			if _, err := h.svc.HandleGitHub(context.Background(), "pull_request", "d1", prMerged(t, 7, tr.Branch, tr.SHA, tc.base)); err != nil {
				t.Fatal(err)
			}
			if got := status(t, h, tr.Repo, tr.SHA); got != tc.want {
				t.Errorf("merged into %s: status %q, want %q", tc.base, got, tc.want)
			}
		})
	}
}

// noScanStore fails any full scan of the store.
type noScanStore struct{ trace.Store }

func (noScanStore) Each(context.Context, func(*h4r.Item) error) error {
	return errors.New("the webhook scanned every item of the store")
}

// TestMergedPullRequestFindsItsTracesByIndex: the pending traces of the
// head branch are found by a metadata query, not a scan.
func TestMergedPullRequestFindsItsTracesByIndex(t *testing.T) {
	h := newHarness(t)
	svc := trace.NewService(noScanStore{h.app.Store}, trace.WithClock(clock), trace.WithLogger(quiet))
	first := fixture(t)
	second := fixture(t)
	second.SHA = "2222222222222222222222222222222222222222"
	for _, tr := range []*trace.CommitTrace{first, second} {
		if _, err := svc.Ingest(context.Background(), tr); err != nil {
			t.Fatal(err)
		}
	}
	res, err := svc.HandleGitHub(context.Background(), "pull_request", "d1", prMerged(t, 8, first.Branch, first.SHA, "main"))
	if err != nil {
		t.Fatal(err)
	}
	if res.TracesUpdated != 2 || status(t, h, second.Repo, second.SHA) != "landed" {
		t.Errorf("traces_updated %d, second commit %s: want 2 and landed", res.TracesUpdated, status(t, h, second.Repo, second.SHA))
	}
}

// recorder is a Publisher that keeps what it was given.
type recorder struct {
	mu   sync.Mutex
	msgs []struct{ subject, data string }
}

func (r *recorder) Publish(subject string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, struct{ subject, data string }{subject, string(data)})
	return nil
}

// TestDecisionsFanOut: with a decision subject, each decision of a stored
// trace is published there on its own, with its trace's id; without one,
// nothing is.
func TestDecisionsFanOut(t *testing.T) {
	rec := &recorder{}
	h := newHarness(t, trace.WithDecisionPublisher(rec, "buckley.trace.decision"))
	stored := h.ingest(t, fixture(t))
	if len(rec.msgs) != len(stored.Decisions) || len(rec.msgs) == 0 {
		t.Fatalf("%d decisions published, want %d", len(rec.msgs), len(stored.Decisions))
	}
	for i, m := range rec.msgs {
		var d trace.Decision
		if err := json.Unmarshal([]byte(m.data), &d); err != nil {
			t.Fatal(err)
		}
		if m.subject != "buckley.trace.decision" || d.TraceID != stored.ID || d.ID != stored.Decisions[i].ID {
			t.Errorf("decision %d on %q with trace_id %q id %q, want buckley.trace.decision, %q, %q", i, m.subject, d.TraceID, d.ID, stored.ID, stored.Decisions[i].ID)
		}
	}
	off := &recorder{}
	newHarness(t, trace.WithDecisionPublisher(off, "")).ingest(t, fixture(t))
	if len(off.msgs) != 0 {
		t.Errorf("%d decisions published without a subject, want none", len(off.msgs))
	}
}
