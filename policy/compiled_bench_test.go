package policy

import (
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// BenchmarkDecideCompiled compares, in one run, deciding 100 items cold
// (nothing remembered) in one OPA batch evaluation (the baseline) and with
// the specialist's compiled predicate, for the bundled policy and a team
// policy that imports it and reads the item's text and kind.
func BenchmarkDecideCompiled(b *testing.B) {
	base := strings.Replace(bundledPolicy, "package cmo.context", "package cmo.base", 1)
	custom := WithModules(map[string]string{"custom.rego": benchCustomPolicy, "base.rego": base})
	items := benchItems(100)
	who := spec(h4r.Internal, "qa")
	for _, p := range []struct {
		name string
		opts []Option
	}{{"default", nil}, {"custom", []Option{custom}}} {
		compiled, opa := enginePair(b, p.opts...)
		if err := compiled.CompiledFor(b.Context(), who); err != nil {
			b.Fatal(err)
		}
		for _, o := range []struct {
			name   string
			engine *Engine
		}{{"opa_batch", opa}, {"compiled", compiled}} {
			b.Run("policy="+p.name+"/option="+o.name, func(b *testing.B) {
				for b.Loop() {
					for _, r := range o.engine.DecideBatch(b.Context(), who, items) {
						if r.Err != nil {
							b.Fatal(r.Err)
						}
					}
				}
				if st := o.engine.CompiledStats(); st.FellBack > 0 {
					b.Fatalf("%d decisions fell back to OPA", st.FellBack)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
			})
		}
	}
}

// BenchmarkCompilePredicate is what the first request of a specialist
// costs on top: the partial evaluation of the policy and the compilation
// of its residual.
func BenchmarkCompilePredicate(b *testing.B) {
	base := strings.Replace(bundledPolicy, "package cmo.context", "package cmo.base", 1)
	for _, p := range []struct {
		name string
		opts []Option
	}{{"default", nil}, {"custom", []Option{WithModules(map[string]string{"custom.rego": benchCustomPolicy, "base.rego": base})}}} {
		e, err := New(b.Context(), p.opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("policy="+p.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := e.compiled.build(b.Context(), spec(h4r.Internal, "qa")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
