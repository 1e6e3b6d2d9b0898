package storetest

import (
	"context"
	"testing"

	"github.com/h4r/h4r"
)

// testNUL: a NUL character (U+0000) anywhere an item is stored is refused
// as invalid_argument naming the field, and nothing of the batch is
// written. Postgres text and jsonb cannot hold one; the embedded store
// refuses it too, so that an item is stored the same by either.
func (s *suite) testNUL(t *testing.T) {
	ctx := context.Background()
	st := s.open(t)
	item := func(change func(*h4r.Item)) h4r.Item {
		it := h4r.Item{ID: "nul-item", Kind: "note", Text: "a note", Content: map[string]any{"a": map[string]any{"b": []any{"x"}}}}
		change(&it)
		return it
	}
	tests := []struct {
		name  string
		item  h4r.Item
		field string
	}{
		{"id", item(func(it *h4r.Item) { it.ID = "nul\x00item" }), "items[1].id"},
		{"kind", item(func(it *h4r.Item) { it.Kind = "no\x00te" }), "items[1].kind"},
		{"text", item(func(it *h4r.Item) { it.Text = "a\x00note" }), "items[1].text"},
		{"tag", item(func(it *h4r.Item) { it.Metadata.Tags = []string{"ok", "t\x00"} }), "items[1].metadata.tags[1]"},
		{"source", item(func(it *h4r.Item) { it.Metadata.Source = "s\x00" }), "items[1].metadata.source"},
		{"link target", item(func(it *h4r.Item) { it.Links = []h4r.Link{{Type: "relates_to", Target: "x\x00"}} }), "items[1].links[0].target"},
		{"nested content value", item(func(it *h4r.Item) { it.Content["a"] = map[string]any{"b": []any{"ok", "\x00"}} }), "items[1].content.a.b[1]"},
		{"content key", item(func(it *h4r.Item) { it.Content["k\x00"] = 1 }), "items[1].content"},
		{"metadata extra", item(func(it *h4r.Item) { it.Metadata.Extra = map[string]any{"status": "x\x00"} }), "items[1].metadata.status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := h4r.Item{ID: "nul-ok", Text: "written with it or not at all"}
			_, err := st.Upsert(ctx, []h4r.Item{ok, tt.item})
			if h4r.ErrorCode(err) != h4r.EINVALID || fieldOf(err) != tt.field {
				t.Fatalf("Upsert = %v (field %q), want invalid_argument naming %s", err, fieldOf(err), tt.field)
			}
			if _, err := st.Get(ctx, ok.ID); h4r.ErrorCode(err) != h4r.ENOTFOUND {
				t.Errorf("the batch's other item was written: %v", err)
			}
		})
	}
}
