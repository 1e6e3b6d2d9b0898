package scs

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/policy"
)

// BenchmarkSliceCold compares, in one run, the two ways a cold request
// (no decision cache, no memo: every candidate decided anew) is decided:
// `opa_batch`, one OPA evaluation over the candidates (today's batch, the
// baseline), and `compiled`, the specialist's compiled predicate (partial
// evaluation compiled to Go; made on the warm-up slice, once per
// specialist and policy revision). Candidates: 100 that no policy sees
// alike (`distinct`) and the demo corpus; the bundled policy and the team
// policy of BenchmarkSlice. ns/item is the whole Slice (policy, redaction,
// budgets) per candidate; p50-ns/op and p95-ns/op are percentiles of
// single Slices.
func BenchmarkSliceCold(b *testing.B) {
	tok := counter(b)
	engine := func(opts ...policy.Option) *policy.Engine {
		e, err := policy.New(b.Context(), append(opts, policy.WithDecisionMemo(0))...)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	custom := policy.WithModules(map[string]string{"custom.rego": customPolicy, "base.rego": customBase(b)})
	policies := []struct {
		name          string
		opa, compiled *policy.Engine
	}{
		{"default", engine(policy.WithCompiledPredicates(0)), engine()},
		{"custom", engine(custom, policy.WithCompiledPredicates(0)), engine(custom)},
	}
	limits := Limits{MaxBytes: 122880, MaxTokens: 30000, MaxItems: 100}
	candidates := []struct {
		name  string
		items []*h4r.Item
	}{{"distinct", distinctCandidates(b, 100)}, {"demo", demoCandidates(b)}}
	for _, c := range candidates {
		for _, p := range policies {
			if err := p.compiled.CompiledFor(b.Context(), internalQA); err != nil {
				b.Fatalf("%s policy is not compiled: %v", p.name, err)
			}
			for _, o := range []struct {
				name   string
				engine *policy.Engine
			}{{"opa_batch", p.opa}, {"compiled", p.compiled}} {
				b.Run(fmt.Sprintf("candidates=%s/policy=%s/option=%s", c.name, p.name, o.name), func(b *testing.B) {
					slicer := New(o.engine, tok, WithConcurrency(1))
					slicer.Slice(b.Context(), internalQA, c.items, limits) // makes the predicate, fills the size cache
					before := o.engine.CompiledStats()
					var lat []time.Duration
					for b.Loop() {
						start := time.Now()
						slicer.Slice(b.Context(), internalQA, c.items, limits)
						lat = append(lat, time.Since(start))
					}
					if after := o.engine.CompiledStats(); after.FellBack != before.FellBack {
						b.Fatalf("%d decisions fell back to OPA", after.FellBack-before.FellBack)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(c.items)), "ns/item")
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns/op")
					b.ReportMetric(float64(lat[len(lat)*95/100].Nanoseconds()), "p95-ns/op")
				})
			}
		}
	}
}
