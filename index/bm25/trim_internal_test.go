package bm25

import (
	"fmt"
	"testing"
)

// spare describes an array whose unused room exceeds what Trim leaves.
func spare[E any](name string, s []E) error {
	if 16*(cap(s)-len(s)) > len(s) {
		return fmt.Errorf("%s: length %d, capacity %d", name, len(s), cap(s))
	}
	return nil
}

// TestTrimLeavesNoRoom checks that after Trim no array of an index built
// by appending keeps more than a sixteenth of its length unused, and that
// the index answers as before.
func TestTrimLeavesNoRoom(t *testing.T) {
	x := New()
	for id := range uint32(20_000) {
		text := fmt.Sprintf("common word%d word%d rare%d", id%7, id%300, id)
		if err := x.Add(id, text); err != nil {
			t.Fatal(err)
		}
	}
	query := map[string]int{"common": 1, "word3": 1, "rare123": 1}
	before, err := x.Reference(query, 50, SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check := func() []error {
		errs := []error{spare("names", x.names), spare("lists", x.lists), spare("ids", x.ids),
			spare("length", x.length), spare("live", x.live), spare("sums", x.sums)}
		for i := range x.lists {
			p := &x.lists[i]
			errs = append(errs, spare("packed of "+x.names[i], p.docs.packed), spare("blocks of "+x.names[i], p.docs.blocks),
				spare("tail of "+x.names[i], p.docs.tail), spare("tfs of "+x.names[i], p.tfs.small),
				spare("maxF of "+x.names[i], p.maxF), spare("last of "+x.names[i], p.last))
		}
		var found []error
		for _, e := range errs {
			if e != nil {
				found = append(found, e)
			}
		}
		return found
	}
	if len(check()) == 0 {
		t.Fatal("the index built by appending has no spare room: the test shows nothing")
	}
	x.Trim()
	if errs := check(); len(errs) > 0 {
		t.Errorf("after Trim, %d arrays keep spare room, the first: %v", len(errs), errs[0])
	}
	after, err := x.Reference(query, 50, SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("Trim changed the hits:\n%v\n%v", before, after)
	}
}
