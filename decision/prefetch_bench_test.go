package decision_test

import (
	"fmt"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/decision"
)

// BenchmarkPrefetch measures POST /v1/prefetch's work over 1,000 commit
// traces of one area, one in ten with a PII summary: every candidate is
// cleared, scored on its redacted copy and sliced.
func BenchmarkPrefetch(b *testing.B) {
	r := newRig(b)
	items := make([]h4r.Item, 1000)
	for i := range items {
		c := ct{sha: fmt.Sprintf("b%04d", i), summary: fmt.Sprintf("Add rate limiting to auth middleware, step %d", i), status: "landed",
			areas: []string{"pkg/auth"}, files: []string{"pkg/auth/middleware.go"}, daysAgo: i % 90}
		items[i] = c.item("org/repo")
		if i%10 == 0 {
			items[i].Metadata.ContainsPII, items[i].Metadata.PIIFields = true, []string{"$.content.summary"}
		}
	}
	if _, err := r.store.Upsert(b.Context(), items); err != nil {
		b.Fatal(err)
	}
	req := decision.PrefetchRequest{Repo: "org/repo", Areas: []string{"pkg/auth"}, RecentFiles: []string{"pkg/auth/middleware.go"},
		TaskDescription: "Add rate limiting to auth endpoints"}
	for b.Loop() {
		if _, err := r.svc.Prefetch(b.Context(), public(), req); err != nil {
			b.Fatal(err)
		}
	}
}
