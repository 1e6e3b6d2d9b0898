package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/h4r/h4r"
)

// testAddLink: links added at once to one item are all kept (a read of
// the item and an upsert of it would lose some), each after the item's
// own links, once per type and target; the version goes up per link
// added; the graph hops over a link added so; a missing item is
// not_found and a full one invalid_argument.
func (s *suite) testAddLink(t *testing.T) {
	st := s.open(t)
	ctx := t.Context()
	own := h4r.Link{Type: "cites", Target: "first", Strength: 0.5}
	if _, err := st.Upsert(ctx, []h4r.Item{{ID: "m", Kind: "memory", Text: "a memory", Links: []h4r.Link{own}}, {ID: "x", Kind: "note", Text: "target"}}); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	before, err := st.Get(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	hop := func() []h4r.Hit {
		t.Helper()
		hits, err := st.Graph().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"m"}, MaxHops: 1, Limit: 100})
		if err != nil {
			t.Fatalf("graph: %v", err)
		}
		return hits
	}
	hop() // a store keeping the graph in memory loads it now, and must follow the adds
	const n = 24
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = st.AddLink(ctx, "m", h4r.Link{Type: "relates_to", Target: fmt.Sprintf("file:%02d", i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("AddLink %d: %v", i, err)
		}
	}
	if added, err := st.AddLink(ctx, "m", h4r.Link{Type: "relates_to", Target: "file:03"}); err != nil || added {
		t.Errorf("adding a link held already: added %v, %v", added, err)
	}
	if added, err := st.AddLink(ctx, "m", h4r.Link{Type: "relates_to", Target: "x"}); err != nil || !added {
		t.Errorf("adding a link to x: added %v, %v", added, err)
	}
	got, err := st.Get(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Links) != n+2 || got.Links[0] != own {
		t.Fatalf("%d links after %d concurrent adds (first %+v): %+v", len(got.Links), n, got.Links[0], got.Links)
	}
	var targets []string
	for _, l := range got.Links[1 : n+1] {
		if l.Strength != 1 {
			t.Errorf("link %+v: strength %v, want the default 1", l, l.Strength)
		}
		targets = append(targets, l.Target)
	}
	slices.Sort(targets)
	for i, tg := range targets {
		if want := fmt.Sprintf("file:%02d", i); tg != want {
			t.Fatalf("targets %v: missing %s", targets, want)
		}
	}
	if got.Metadata.Version != before.Metadata.Version+n+1 {
		t.Errorf("version %d, want %d", got.Metadata.Version, before.Metadata.Version+n+1)
	}
	if hops := hop(); !slices.ContainsFunc(hops, func(h h4r.Hit) bool { return h.Item != nil && h.Item.ID == "x" }) {
		t.Errorf("a hop from m does not reach x through the added link: %+v", hops)
	}
	if _, err := st.AddLink(ctx, "missing", h4r.Link{Type: "t", Target: "x"}); h4r.ErrorCode(err) != h4r.ENOTFOUND {
		t.Errorf("linking a missing item: %v, want not_found", err)
	}
	full := h4r.Item{ID: "full", Kind: "note", Text: "full"}
	for i := range h4r.MaxLinks {
		full.Links = append(full.Links, h4r.Link{Type: "t", Target: fmt.Sprint(i)})
	}
	if _, err := st.Upsert(ctx, []h4r.Item{full}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AddLink(ctx, "full", h4r.Link{Type: "t", Target: "one more"}); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Errorf("linking a full item: %v, want invalid_argument", err)
	}
}
