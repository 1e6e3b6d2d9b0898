package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources"
)

// benchItems returns n items that exercise every rule.
func benchItems(n int) []*sources.Item {
	items := make([]*sources.Item, n)
	for i := range items {
		m := sources.Metadata{Trust: ptr(float64(i%10) / 10), Sensitivity: ptr(float64(i%7) / 7), HasCredentials: i%13 == 0}
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

func BenchmarkDecide(b *testing.B) {
	engine, err := New(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	deciders := []struct {
		name   string
		decide func(context.Context, h4r.Specialist, *sources.Item) (Decision, error)
	}{
		{"rego", engine.Decide},
		{"local", LocalRules{}.Decide},
	}
	who := spec(h4r.Internal, "qa")
	for _, d := range deciders {
		for _, n := range []int{1, 100} {
			items := benchItems(n)
			b.Run(fmt.Sprintf("%s/%d_items", d.name, n), func(b *testing.B) {
				ctx := b.Context()
				for b.Loop() {
					for _, it := range items {
						if _, err := d.decide(ctx, who, it); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/item")
			})
		}
	}
}
