package policy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// benchItems returns n items that exercise every rule.
func benchItems(n int) []*h4r.Item {
	items := make([]*h4r.Item, n)
	for i := range items {
		m := h4r.Metadata{Trust: ptr(float64(i%10) / 10), Sensitivity: ptr(float64(i%7) / 7), HasCredentials: i%13 == 0}
		if i%3 == 0 {
			m.ContainsPII, m.PIIFields = true, []string{"$.content.personalData"}
		}
		if i%4 == 0 {
			m.RestrictedToGroups = []string{"qa", "ops"}
		}
		items[i] = memory(m)
		items[i].ID = fmt.Sprintf("mem-%03d", i)
	}
	return items
}

// BenchmarkDecide measures one decision per item: OPA per item, OPA over
// the whole batch, and the Go rules.
func BenchmarkDecide(b *testing.B) {
	engine, err := New(b.Context(), WithDecisionMemo(0), WithCompiledPredicates(0)) // every batch cold, by OPA
	if err != nil {
		b.Fatal(err)
	}
	// The same policy given the whole item, as if a rule read
	// input.item: what pruning the input saves.
	fullInput := *engine
	fullInput.needs = itemNeeds{all: true}
	perItem := func(decide func(context.Context, h4r.Specialist, *h4r.Item) (h4r.Decision, error)) func(context.Context, h4r.Specialist, []*h4r.Item) error {
		return func(ctx context.Context, who h4r.Specialist, items []*h4r.Item) error {
			for _, it := range items {
				if _, err := decide(ctx, who, it); err != nil {
					return err
				}
			}
			return nil
		}
	}
	deciders := []struct {
		name   string
		decide func(context.Context, h4r.Specialist, []*h4r.Item) error
	}{
		{"rego_per_item", perItem(engine.Decide)},
		{"rego_per_item_full_input", perItem(fullInput.Decide)},
		{"rego_batch", func(ctx context.Context, who h4r.Specialist, items []*h4r.Item) error {
			for _, r := range engine.DecideBatch(ctx, who, items) {
				if r.Err != nil {
					return r.Err
				}
			}
			return nil
		}},
		{"local", perItem(LocalRules{}.Decide)},
	}
	who := spec(h4r.Internal, "qa")
	for _, d := range deciders {
		for _, n := range []int{1, 100} {
			items := benchItems(n)
			b.Run(fmt.Sprintf("%s/%d_items", d.name, n), func(b *testing.B) {
				ctx := b.Context()
				for b.Loop() {
					if err := d.decide(ctx, who, items); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			})
		}
	}
}

// benchCustomPolicy is a team policy that imports the bundled rules and
// reads the item's text and kind.
const benchCustomPolicy = `package cmo.context

import data.cmo.base

deny contains d if some d in base.deny

deny contains "secret_in_text" if regex.match(` + "`(?i)(api[_-]?key|password)`" + `, input.item.text)

deny contains "kind_not_public" if {
	input.specialist.securityLevel == "public"
	not input.item.kind in {"test_failure", "fix", "note"}
}

default allow := false

allow if count(deny) == 0

default redact := false

redact if {
	allow
	base.redact
}

default redactedFields := []

redactedFields := base.pii_fields if redact
`

// BenchmarkDecideBatch compares deciding 100 items one evaluation each
// (the baseline) with one evaluation of the batch module (each distinct
// input's decision under "with input as"), for the bundled policy and for
// a team policy that imports it and reads the item's text and kind.
// (Evaluating each distinct input with the per-item query instead was
// measured too: no better than the loop, n=6.)
func BenchmarkDecideBatch(b *testing.B) {
	bundledSrc := bundledPolicy
	base := strings.Replace(bundledSrc, "package cmo.context", "package cmo.base", 1)
	// Nothing remembered across iterations: every batch decides cold, by
	// OPA (BenchmarkDecideCompiled measures compiled predicates).
	custom, err := New(b.Context(), WithDecisionMemo(0), WithCompiledPredicates(0), WithModules(map[string]string{"custom.rego": benchCustomPolicy, "base.rego": base}))
	if err != nil {
		b.Fatal(err)
	}
	bundled, err := New(b.Context(), WithDecisionMemo(0), WithCompiledPredicates(0))
	if err != nil {
		b.Fatal(err)
	}
	items := benchItems(100)
	who := spec(h4r.Internal, "qa")
	for _, p := range []struct {
		name   string
		engine *Engine
	}{{"default", bundled}, {"custom", custom}} {
		for _, o := range []struct {
			name   string
			decide func(context.Context, h4r.Specialist, []*h4r.Item) []h4r.DecisionResult
		}{{"per_item_loop", p.engine.decideEach}, {"batch_module", p.engine.DecideBatch}} {
			b.Run("policy="+p.name+"/option="+o.name, func(b *testing.B) {
				for b.Loop() {
					for _, r := range o.decide(b.Context(), who, items) {
						if r.Err != nil {
							b.Fatal(r.Err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/item")
			})
		}
	}
}
