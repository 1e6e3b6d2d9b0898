package storetest

import (
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/tokens"
)

// testDatabaseFailureMidBatch: when the database refuses one write in the
// middle of a batch (here a trigger on a sentinel id), nothing of the batch
// remains: not the rows written before it, not their tags, links or index
// entries, and not the replacement of an existing item.
func (s *suite) testDatabaseFailureMidBatch(t *testing.T) {
	if s.failing == nil {
		t.Skip("the opener cannot make the database fail (storetest.WithFailingWrites)")
	}
	st, failOn := s.failing(t)
	upsert(t, st, textItem("keep", "kept text"))
	failOn("boom")

	batch := []h4r.Item{
		textItem("keep", "replaced zebra text that must not land"),
		{ID: "n1", Kind: "event", Text: "new zebra item", Metadata: h4r.Metadata{Tags: []string{"fresh"}},
			Links: []h4r.Link{{Type: "caused_by", Target: "keep"}}},
		textItem("boom", "the database refuses this zebra"),
		textItem("n2", "another new zebra item"),
	}
	_, err := st.Upsert(t.Context(), batch)
	if err == nil {
		t.Fatal("Upsert succeeded although the database refused an item of the batch")
	}
	if code := h4r.ErrorCode(err); code == h4r.EINVALID {
		t.Errorf("error code %s: a database failure is not the caller's invalid input (%v)", code, err)
	}

	if n := count(t, st); n != 1 {
		t.Errorf("Count = %d after a failed batch, want 1", n)
	}
	kept := get(t, st, "keep")
	if kept.Text != "kept text" || kept.Metadata.Version != 1 {
		t.Errorf("existing item changed: text %q version %d", kept.Text, kept.Metadata.Version)
	}
	for _, id := range []string{"n1", "boom", "n2"} {
		if _, err := st.Get(t.Context(), id); h4r.ErrorCode(err) != h4r.ENOTFOUND {
			t.Errorf("Get(%q) after a failed batch: %v, want not_found", id, err)
		}
	}
	if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "zebra"}); len(hits) != 0 {
		t.Errorf("the failed batch is searchable: %v", hitIDs(hits))
	}
	if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "fresh", Filters: h4r.Filters{Tags: []string{"fresh"}}}); len(hits) != 0 {
		t.Errorf("the failed batch's tags remain: %v", hitIDs(hits))
	}
	if hits := generate(t, st.Graph(), h4r.CandidateQuery{Anchors: []string{"keep"}, MaxHops: 2}); len(hits) != 1 {
		t.Errorf("the failed batch's links remain: hops from keep reach %v", hitIDs(hits))
	}
}

// testEncodingChange: token counts are stored with the encoding they were
// counted with; a store opened with another encoding recounts them, so
// that budgets never measure an item with counts of another encoding.
func (s *suite) testEncodingChange(t *testing.T) {
	if s.encodings == nil {
		t.Skip("the opener cannot choose the token encoding (storetest.WithEncodings)")
	}
	open := s.encodings(t)
	// Text whose counts differ between the two encodings.
	text := "Ünïcödé façade naïveté — 東京 déjà vu, 10,000 ms ≥ 2×"
	st := open(t, tokens.CL100K)
	upsert(t, st, textItem("a", text))
	delivered, err := get(t, st, "a").Delivered().Encode()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, enc := range []string{tokens.CL100K, tokens.O200K} {
		c, err := tokens.New(enc)
		if err != nil {
			t.Fatal(err)
		}
		counts[enc] = c.Count(string(delivered))
	}
	if counts[tokens.CL100K] == counts[tokens.O200K] {
		t.Fatalf("the test text counts %d tokens in both encodings: pick another", counts[tokens.CL100K])
	}
	if got := get(t, st, "a").Metadata.Tokens; got != counts[tokens.CL100K] {
		t.Fatalf("tokens = %d, want %d (%s)", got, counts[tokens.CL100K], tokens.CL100K)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{tokens.O200K, tokens.CL100K} {
		st := open(t, enc)
		if got := get(t, st, "a").Metadata.Tokens; got != counts[enc] {
			t.Errorf("reopened with %s: tokens = %d, want %d", enc, got, counts[enc])
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// replaceFixture stores a document and three chunks whose old text holds
// "walrus", linked to the document, as ingestion writes a file.
func replaceFixture(t *testing.T, st Store) {
	t.Helper()
	upsert(t, st,
		textItem("doc", "document about walrus"),
		h4r.Item{ID: "c0", Kind: "event", Text: "old walrus chunk zero", Links: []h4r.Link{{Type: "part_of", Target: "doc"}}},
		h4r.Item{ID: "c1", Kind: "event", Text: "old walrus chunk one", Links: []h4r.Link{{Type: "part_of", Target: "doc"}}},
		h4r.Item{ID: "c2", Kind: "event", Text: "old walrus chunk two", Links: []h4r.Link{{Type: "part_of", Target: "doc"}}},
	)
}

// testReplaceWithDeletes: Replace writes the new items and deletes the
// surplus ones together; the full text and the graph see both. A Replace
// whose items are invalid, or that deletes an id it also writes, changes
// nothing, deletes included.
func (s *suite) testReplaceWithDeletes(t *testing.T) {
	st := s.open(t)
	replaceFixture(t, st)

	bad := []h4r.Item{{ID: "doc", Kind: "event", Text: "document about narwhal"}, {ID: "c0", Kind: "event", Text: ""}}
	if _, err := st.Replace(t.Context(), bad, []string{"c1", "c2"}); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Fatalf("Replace with an invalid item: %v, want invalid", err)
	}
	overlap := []h4r.Item{textItem("c0", "new narwhal chunk zero")}
	if _, err := st.Replace(t.Context(), overlap, []string{"c1", "c0"}); h4r.ErrorCode(err) != h4r.EINVALID {
		t.Fatalf("Replace writing and deleting c0: %v, want invalid", err)
	}
	if n := count(t, st); n != 4 {
		t.Errorf("Count = %d after refused Replaces, want 4: their deletes were applied", n)
	}
	if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "narwhal"}); len(hits) != 0 {
		t.Errorf("a refused Replace's items are searchable: %v", hitIDs(hits))
	}

	items := []h4r.Item{
		textItem("doc", "document about narwhal"),
		{ID: "c0", Kind: "event", Text: "new narwhal chunk zero", Links: []h4r.Link{{Type: "part_of", Target: "doc"}}},
	}
	ids, err := st.Replace(t.Context(), items, []string{"c1", "c2", "never-stored"})
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if !slices.Equal(ids, []string{"doc", "c0"}) {
		t.Errorf("Replace returned %v, want [doc c0]", ids)
	}
	if n := count(t, st); n != 2 {
		t.Errorf("Count = %d after Replace, want 2", n)
	}
	for _, id := range []string{"c1", "c2"} {
		if _, err := st.Get(t.Context(), id); h4r.ErrorCode(err) != h4r.ENOTFOUND {
			t.Errorf("Get(%q) after Replace deleted it: %v, want not_found", id, err)
		}
	}
	if got := get(t, st, "c0"); got.Text != "new narwhal chunk zero" || got.Metadata.Version != 2 {
		t.Errorf("c0 after Replace: text %q version %d, want the new text at version 2", got.Text, got.Metadata.Version)
	}
	if hits := generate(t, st.FullText(), h4r.CandidateQuery{Text: "walrus"}); len(hits) != 0 {
		t.Errorf("deleted or replaced text still searchable: %v", hitIDs(hits))
	}
	if got := hitIDs(generate(t, st.FullText(), h4r.CandidateQuery{Text: "narwhal"})); !sameSet(got, []string{"doc", "c0"}) {
		t.Errorf("narwhal finds %v, want doc and c0", got)
	}
	if got := hitIDs(generate(t, st.Graph(), h4r.CandidateQuery{Anchors: []string{"doc"}, MaxHops: 1})); !sameSet(got, []string{"doc", "c0"}) {
		t.Errorf("hops from doc reach %v after Replace, want doc and c0", got)
	}
	// A deleted id written again goes on from its last version.
	upsert(t, st, textItem("c1", "chunk one again"))
	if v := get(t, st, "c1").Metadata.Version; v != 2 {
		t.Errorf("c1 written again after Replace deleted it: version %d, want 2", v)
	}
}

// testReplaceWithDeletesDatabaseFailure: when the database refuses one of
// a Replace's items, its deletes are not applied either.
func (s *suite) testReplaceWithDeletesDatabaseFailure(t *testing.T) {
	if s.failing == nil {
		t.Skip("the opener cannot make the database fail (storetest.WithFailingWrites)")
	}
	st, failOn := s.failing(t)
	replaceFixture(t, st)
	failOn("boom")
	items := []h4r.Item{textItem("doc", "document about narwhal"), textItem("boom", "the database refuses this narwhal")}
	if _, err := st.Replace(t.Context(), items, []string{"c1", "c2"}); err == nil {
		t.Fatal("Replace succeeded although the database refused an item")
	}
	if n := count(t, st); n != 4 {
		t.Errorf("Count = %d after a failed Replace, want 4: its deletes were applied", n)
	}
	for _, id := range []string{"c1", "c2"} {
		if got := get(t, st, id); got.Metadata.Version != 1 {
			t.Errorf("%s changed by a failed Replace: version %d", id, got.Metadata.Version)
		}
	}
	if got := hitIDs(generate(t, st.FullText(), h4r.CandidateQuery{Text: "walrus"})); !sameSet(got, []string{"doc", "c0", "c1", "c2"}) {
		t.Errorf("walrus finds %v after a failed Replace, want all four old items", got)
	}
	if got := hitIDs(generate(t, st.Graph(), h4r.CandidateQuery{Anchors: []string{"doc"}, MaxHops: 1})); !sameSet(got, []string{"doc", "c0", "c1", "c2"}) {
		t.Errorf("hops from doc reach %v after a failed Replace, want all four", got)
	}
}

func sameSet(got, want []string) bool {
	return len(got) == len(want) && !slices.ContainsFunc(want, func(id string) bool { return !slices.Contains(got, id) })
}
