package pack

import (
	"fmt"
	"testing"

	"github.com/h4r/h4r"
)

// BenchmarkBuild100 builds a pack from 100 ranked entries, 64 of them kept,
// each a few sentences long: the size of a large request.
func BenchmarkBuild100(b *testing.B) {
	es := make([]Entry, 100)
	for i := range es {
		text := fmt.Sprintf("Test spec-%03d failed on the login page. The selector #btn-%d was not found after deploy %d. "+
			"A retry passed intermittently. Nothing else changed in build %d.", i, i, 800+i%7, i)
		reason := h4r.ReasonKept
		if i%5 == 3 {
			reason = h4r.ReasonPolicy
		} else if i >= 80 {
			reason = h4r.ReasonBudgetTokens
		}
		es[i] = entry(fmt.Sprintf("mem-%03d", i), "test_failure", text, reason, 1-float64(i)/100)
		es[i].Ranked.Candidate.Item.Content = map[string]any{"test": fmt.Sprintf("spec-%03d", i), "selector": fmt.Sprintf("#btn-%d", i)}
		if es[i].Delivered != nil {
			es[i].Delivered.Content = es[i].Ranked.Candidate.Item.Content
		}
	}
	in := Input{Query: "login test failures with selector issues after deploy", Entries: es, IncludeScores: true}
	builder := NewBuilder()
	b.ReportAllocs()
	for b.Loop() {
		builder.Build(in)
	}
}
