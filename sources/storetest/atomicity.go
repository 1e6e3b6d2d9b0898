package storetest

import (
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
