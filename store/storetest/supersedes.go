package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// supersedes is an item id that supersedes the items of targets.
func supersedes(id string, targets ...string) h4r.Item {
	it := textItem(id, "statement "+id)
	for _, t := range targets {
		it.Links = append(it.Links, h4r.Link{Type: h4r.LinkSupersedes, Target: t})
	}
	return it
}

// testSupersedes: supersedes links and validity bounds are kept as
// written; a supersedes link to no item, one to the item itself and one
// closing a cycle are refused with an error naming the link's target, and
// nothing of the batch is written.
func (s *suite) testSupersedes(t *testing.T) {
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	until := time.Date(2026, 6, 1, 0, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	t.Run("kept as written", func(t *testing.T) {
		st := s.open(t)
		old := textItem("old", "I live in Paris")
		old.Metadata.ValidFrom, old.Metadata.ValidUntil = from, until
		upsert(t, st, old, supersedes("new", "old"), supersedes("newest", "new"))
		got := get(t, st, "old")
		if !got.Metadata.ValidFrom.Equal(from) || !got.Metadata.ValidUntil.Equal(until) {
			t.Errorf("validFrom, validUntil = %v, %v; want %v, %v", got.Metadata.ValidFrom, got.Metadata.ValidUntil, from, until)
		}
		if got.Metadata.ValidUntil.Location() != time.UTC {
			t.Errorf("validUntil is in %v, want UTC", got.Metadata.ValidUntil.Location())
		}
		if n := get(t, st, "newest").Supersedes(); len(n) != 1 || n[0] != "new" {
			t.Errorf("newest supersedes %q, want [new]", n)
		}
		// Re-writing an item keeps its supersedes link valid.
		upsert(t, st, supersedes("new", "old"))
	})
	tests := []struct {
		name      string
		before    []h4r.Item // written first, successfully
		batch     []h4r.Item
		deletes   []string
		wantField string
		absent    []string // ids the refused batch must not have written
	}{
		{name: "target missing", batch: []h4r.Item{textItem("a", "a"), supersedes("b", "ghost")},
			wantField: "items[1].links[0].target", absent: []string{"a", "b"}},
		{name: "target deleted in the same batch", before: []h4r.Item{textItem("x", "x")},
			batch: []h4r.Item{supersedes("b", "x")}, deletes: []string{"x"}, wantField: "items[0].links[0].target", absent: []string{"b"}},
		{name: "itself", batch: []h4r.Item{supersedes("a", "a")}, wantField: "items[0].links[0].target", absent: []string{"a"}},
		{name: "two-item cycle in one batch", batch: []h4r.Item{supersedes("a", "b"), supersedes("b", "a")},
			wantField: "items[0].links[0].target", absent: []string{"a", "b"}},
		{name: "cycle closed by a later write", before: []h4r.Item{textItem("a", "a"), supersedes("b", "a"), supersedes("c", "b")},
			batch: []h4r.Item{textItem("z", "z"), supersedes("a", "c")}, wantField: "items[1].links[0].target", absent: []string{"z"}},
		{name: "validUntil before validFrom", batch: []h4r.Item{{ID: "v", Text: "v", Metadata: h4r.Metadata{ValidFrom: from, ValidUntil: from.Add(-time.Hour)}}},
			wantField: "items[0].metadata.validUntil", absent: []string{"v"}},
		{name: "validUntil equal to validFrom", batch: []h4r.Item{{ID: "v", Text: "v", Metadata: h4r.Metadata{ValidFrom: from, ValidUntil: from}}},
			wantField: "items[0].metadata.validUntil", absent: []string{"v"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := s.open(t)
			if len(tt.before) > 0 {
				upsert(t, st, tt.before...)
			}
			_, err := st.Replace(t.Context(), tt.batch, tt.deletes)
			wantError(t, err, h4r.EINVALID, tt.wantField)
			for _, id := range tt.absent {
				if _, err := st.Get(t.Context(), id); h4r.ErrorCode(err) != h4r.ENOTFOUND {
					t.Errorf("Get(%q) after the refused batch: %v, want not_found", id, err)
				}
			}
			for _, id := range tt.deletes {
				get(t, st, id) // the refused batch deleted nothing
			}
		})
	}
	t.Run("add link", func(t *testing.T) {
		st := s.open(t)
		upsert(t, st, textItem("a", "a"), supersedes("b", "a"))
		ctx := context.Background()
		for _, c := range []struct {
			name, id, target string
		}{{"missing target", "b", "ghost"}, {"cycle", "a", "b"}, {"itself", "a", "a"}} {
			_, err := st.AddLink(ctx, c.id, h4r.Link{Type: h4r.LinkSupersedes, Target: c.target})
			t.Run(c.name, func(t *testing.T) { wantError(t, err, h4r.EINVALID, "link.target") })
		}
		if got := get(t, st, "a").Links; len(got) != 0 {
			t.Errorf("a holds %v after refused adds, want no link", got)
		}
		if added, err := st.AddLink(ctx, "a", h4r.Link{Type: h4r.LinkSupersedes, Target: "c"}); h4r.ErrorCode(err) != h4r.EINVALID || added {
			t.Errorf("AddLink to a missing item: added %v, error %v; want invalid_argument", added, err)
		}
		upsert(t, st, textItem("c", "c"))
		if added, err := st.AddLink(ctx, "b", h4r.Link{Type: h4r.LinkSupersedes, Target: "c"}); err != nil || !added {
			t.Errorf("AddLink b supersedes c: added %v, error %v; want added", added, err)
		}
	})
}
