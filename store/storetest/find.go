package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// testEntityLinks: a link's targetType and context survive a write and a
// read, and a link may name an entity that is no item (a file, an epic).
func (s *suite) testEntityLinks(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	want := []h4r.Link{
		{Type: h4r.LinkCitesPrecedent, Target: "mj100", TargetType: h4r.TargetEpic, Strength: 1, Context: "solved OAuth refresh the same way"},
		{Type: h4r.LinkAssignsFile, Target: "src/auth.ts", TargetType: h4r.TargetFile, Strength: 0.5},
		{Type: "caused_by", Target: "other", Strength: 1},
	}
	if _, err := st.Upsert(ctx, []h4r.Item{{ID: "dt-1", Kind: "decision_trace", Text: "use file-based strategy", Links: want}}); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	got, err := st.Get(ctx, "dt-1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !slices.Equal(got.Links, want) {
		t.Errorf("links = %+v, want %+v", got.Links, want)
	}
	var seen []h4r.Link
	if err := st.Each(ctx, func(it *h4r.Item) error { seen = append(seen, it.Links...); return nil }); err != nil {
		t.Fatalf("Each: %v", err)
	}
	if !slices.Equal(seen, want) {
		t.Errorf("Each links = %+v, want %+v", seen, want)
	}
}

// testFind: items by a link they hold (target, target type, link types)
// and filters, newest first, limited.
func (s *suite) testFind(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	item := func(id string, day int, kind string, links ...h4r.Link) h4r.Item {
		return h4r.Item{ID: id, Kind: kind, Text: "decision " + id, Links: links,
			Metadata: h4r.Metadata{CreatedAt: base.AddDate(0, 0, day), Extra: map[string]any{"decision_type": "x" + id[len(id)-1:]}}}
	}
	cite := func(epic string) h4r.Link {
		return h4r.Link{Type: h4r.LinkCitesPrecedent, Target: epic, TargetType: h4r.TargetEpic}
	}
	items := []h4r.Item{
		item("d1", 1, "decision_trace", cite("mj100")),
		item("d2", 3, "decision_trace", cite("mj100"), h4r.Link{Type: h4r.LinkAppliesPattern, Target: "mem-1", TargetType: h4r.TargetMemory}),
		item("d3", 2, "decision_trace", cite("mj200")),
		item("d4", 4, "decision_trace", h4r.Link{Type: h4r.LinkSimilarTo, Target: "mj100", TargetType: h4r.TargetEpic}),
		item("d5", 5, "event", cite("mj100")),
		item("d6", 6, "decision_trace", h4r.Link{Type: h4r.LinkCitesPrecedent, Target: "mj100", TargetType: h4r.TargetFile}),
	}
	if _, err := st.Upsert(ctx, items); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	decisions := h4r.Filters{Kinds: []string{"decision_trace"}}
	tests := []struct {
		name string
		q    h4r.ItemQuery
		want []string
	}{
		{"citing mj100, newest first", h4r.ItemQuery{Filters: decisions,
			Linked: &h4r.LinkMatch{Target: "mj100", TargetType: h4r.TargetEpic, Types: []string{h4r.LinkCitesPrecedent}}}, []string{"d2", "d1"}},
		{"any link type to the epic", h4r.ItemQuery{Filters: decisions,
			Linked: &h4r.LinkMatch{Target: "mj100", TargetType: h4r.TargetEpic}}, []string{"d4", "d2", "d1"}},
		{"any target type", h4r.ItemQuery{Filters: decisions,
			Linked: &h4r.LinkMatch{Target: "mj100", Types: []string{h4r.LinkCitesPrecedent}}}, []string{"d6", "d2", "d1"}},
		{"any kind", h4r.ItemQuery{
			Linked: &h4r.LinkMatch{Target: "mj100", TargetType: h4r.TargetEpic, Types: []string{h4r.LinkCitesPrecedent}}}, []string{"d5", "d2", "d1"}},
		{"two link types", h4r.ItemQuery{Filters: decisions,
			Linked: &h4r.LinkMatch{Target: "mj100", Types: []string{h4r.LinkSimilarTo, h4r.LinkCitesPrecedent}}}, []string{"d6", "d4", "d2", "d1"}},
		{"applies pattern", h4r.ItemQuery{
			Linked: &h4r.LinkMatch{Target: "mem-1", TargetType: h4r.TargetMemory, Types: []string{h4r.LinkAppliesPattern}}}, []string{"d2"}},
		{"limit", h4r.ItemQuery{Filters: decisions, Linked: &h4r.LinkMatch{Target: "mj100"}, Limit: 2}, []string{"d6", "d4"}},
		{"metadata filter and link", h4r.ItemQuery{Filters: h4r.Filters{Metadata: map[string]any{"decision_type": "x1"}},
			Linked: &h4r.LinkMatch{Target: "mj100"}}, []string{"d1"}},
		{"no link match: filters only", h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{"event"}}}, []string{"d5"}},
		{"unknown target", h4r.ItemQuery{Linked: &h4r.LinkMatch{Target: "nobody"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := st.Find(ctx, tt.q)
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if ids := idsOf(got); !slices.Equal(ids, tt.want) {
				t.Errorf("Find = %v, want %v", ids, tt.want)
			}
		})
	}
	// A deleted source no longer matches; its links went with it.
	if err := st.Delete(ctx, "d2"); err != nil {
		t.Fatal(err)
	}
	got, err := st.Find(ctx, h4r.ItemQuery{Filters: decisions, Linked: &h4r.LinkMatch{Target: "mj100", TargetType: h4r.TargetEpic, Types: []string{h4r.LinkCitesPrecedent}}})
	if err != nil {
		t.Fatal(err)
	}
	if ids := idsOf(got); !slices.Equal(ids, []string{"d1"}) {
		t.Errorf("after deleting d2: %v, want [d1]", ids)
	}
	for _, bad := range []h4r.ItemQuery{{Limit: -1}, {Limit: h4r.MaxFindLimit + 1}, {Linked: &h4r.LinkMatch{}}} {
		if _, err := st.Find(ctx, bad); h4r.ErrorCode(err) != h4r.EINVALID {
			t.Errorf("Find(%+v) = %v, want invalid_argument", bad, err)
		}
	}
}

func idsOf(items []*h4r.Item) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}
