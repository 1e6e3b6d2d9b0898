package sqlite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// Items are encoded on several CPUs; a batch with two items too large to
// store is still rejected naming the first of them, and nothing is written.
func TestUpsertNamesTheFirstBadItemOfABatch(t *testing.T) {
	s := openTemp(t)
	items := make([]h4r.Item, 300)
	for i := range items {
		items[i] = h4r.Item{ID: fmt.Sprintf("item-%03d", i), Kind: "note", Text: fmt.Sprintf("note %d", i)}
	}
	huge := strings.Repeat("x", h4r.MaxItemBytes)
	for _, i := range []int{250, 70} {
		items[i].Content = map[string]any{"blob": huge}
	}
	_, err := s.Upsert(t.Context(), items)
	if e, ok := err.(*h4r.Error); !ok || e.Code != h4r.EINVALID || !strings.HasPrefix(e.Field, "items[70]") {
		t.Fatalf("error %v, want invalid naming items[70]", err)
	}
	if n, err := s.Count(t.Context()); err != nil || n != 0 {
		t.Errorf("Count = %d, %v; want nothing written", n, err)
	}
}
