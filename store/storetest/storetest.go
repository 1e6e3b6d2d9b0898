package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/tokens"
)

// Store is what the suite tests: the methods every H4R store has.
type Store interface {
	// Close releases the store after writing pending access counts. The
	// suite may call it more than once; later calls must do no harm.
	Close() error
	Ping(ctx context.Context) error
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	// Replace upserts items and deletes the ids in deletes in one
	// transaction (ingestion replacing a changed file's chunks).
	Replace(ctx context.Context, items []h4r.Item, deletes []string) ([]string, error)
	// ReplaceIf is Replace done only when check holds in its transaction;
	// otherwise nothing is written and the error wraps
	// h4r.ErrVersionConflict.
	ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Delete(ctx context.Context, id string) error
	Count(ctx context.Context) (int, error)
	FullText() h4r.Generator
	Graph() h4r.Generator
	RecordAccess(ids []string)
	// Each visits every item in id order; derived indexes are rebuilt
	// from it.
	Each(ctx context.Context, fn func(*h4r.Item) error) error
	// Find lists items by filters and a link they hold, newest first
	// (created_at, then id, descending); without a link, a read by
	// filter alone.
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
	// AddLink adds one link to an item atomically (false: it held the
	// same type and target already).
	AddLink(ctx context.Context, id string, l h4r.Link) (bool, error)
}

// Option configures Run.
type Option func(*suite)

// WithReopen enables the subtests that close a store and open its data
// again: persistence, access counts written on Close, and a replace keeping
// an item's access count. newPlace makes a fresh, empty place for a store's
// data (a temporary directory, a database schema) and returns a function
// that opens a store over it; each call of that function opens the same
// data again. Stores it opens must be closed by t.Cleanup as well.
func WithReopen(newPlace func(t *testing.T) (open func(t *testing.T) Store)) Option {
	return func(s *suite) { s.newPlace = newPlace }
}

// WithFailingWrites enables the case where the database itself fails in
// the middle of a batch. open returns a new, empty store and a function
// that makes the database refuse (raise an error on) any write of the item
// with the given id, as a test-only trigger does.
func WithFailingWrites(open func(t *testing.T) (Store, func(id string))) Option {
	return func(s *suite) { s.failing = open }
}

// WithEncodings enables the case where the token encoding changes between
// two opens of the same data. newPlace is WithReopen's, except that each
// open names the tiktoken encoding its store counts with.
func WithEncodings(newPlace func(t *testing.T) (open func(t *testing.T, encoding string) Store)) Option {
	return func(s *suite) { s.encodings = newPlace }
}

type suite struct {
	open      func(t *testing.T) Store
	newPlace  func(t *testing.T) func(t *testing.T) Store
	failing   func(t *testing.T) (Store, func(id string))
	encodings func(t *testing.T) func(t *testing.T, encoding string) Store
	counter   *tokens.Counter
}

// Run runs the store contract against the stores open returns. open must
// return a new, empty store for t and close it when t ends (t.Cleanup).
func Run(t *testing.T, open func(t *testing.T) Store, opts ...Option) {
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{open: open, counter: counter}
	for _, opt := range opts {
		opt(s)
	}
	t.Run("generator_names", s.testGeneratorNames)
	t.Run("ingest", s.testIngest)
	t.Run("replace", s.testReplace)
	t.Run("batch_atomicity", s.testBatchAtomicity)
	t.Run("batch_atomicity_database_failure", s.testDatabaseFailureMidBatch)
	t.Run("replace_with_deletes", s.testReplaceWithDeletes)
	t.Run("replace_if_version", s.testReplaceIf)
	t.Run("replace_with_deletes_database_failure", s.testReplaceWithDeletesDatabaseFailure)
	t.Run("token_encoding_change", s.testEncodingChange)
	t.Run("duplicate_ids_in_batch", s.testDuplicateIDs)
	t.Run("not_found_and_invalid", s.testNotFound)
	t.Run("delete", s.testDelete)
	t.Run("filters", s.testFilters)
	t.Run("fulltext_ranking", s.testFullTextRanking)
	t.Run("fulltext_query_analysis", s.testFullTextQueryAnalysis)
	t.Run("fulltext_syntax", s.testFullTextSyntax)
	t.Run("fulltext_expansion", s.testFullTextExpansion)
	t.Run("hops", s.testHops)
	t.Run("bad_queries", s.testBadQueries)
	t.Run("access_counts", s.testAccessCounts)
	t.Run("persistence", s.testPersistence)
	t.Run("concurrent_writers", s.testConcurrentWriters)
	t.Run("each", s.testEach)
	t.Run("list", s.testList)
	t.Run("fulltext_follows_history", s.testHistory)
	t.Run("filter_values_with_syntax", s.testFilterValues)
	t.Run("entity_links", s.testEntityLinks)
	t.Run("find", s.testFind)
	t.Run("add_link", s.testAddLink)
	t.Run("supersedes", s.testSupersedes)
	t.Run("nul_characters", s.testNUL)
	t.Run("embedder_model", s.testEmbedderModel)
}

// reopenable returns a function opening one place's data again, or skips t
// when the store under test cannot be reopened.
func (s *suite) reopenable(t *testing.T) func(t *testing.T) Store {
	t.Helper()
	if s.newPlace == nil {
		t.Skip("the opener does not support reopening (storetest.WithReopen)")
	}
	return s.newPlace(t)
}

func (s *suite) testGeneratorNames(t *testing.T) {
	st := s.open(t)
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	tests := []struct {
		name string
		gen  h4r.Generator
		want string
	}{
		{"full text", st.FullText(), h4r.GenFullText},
		{"graph", st.Graph(), h4r.GenGraph},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.gen.Name(); got != tt.want {
				t.Errorf("Name() = %q, want %q", got, tt.want)
			}
		})
	}
}

// upsert writes items and fails t on error.
func upsert(t *testing.T, st Store, items ...h4r.Item) {
	t.Helper()
	ids, err := st.Upsert(t.Context(), items)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if len(ids) != len(items) {
		t.Fatalf("Upsert returned %d ids for %d items", len(ids), len(items))
	}
}

func get(t *testing.T, st Store, id string) *h4r.Item {
	t.Helper()
	it, err := st.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return it
}

func count(t *testing.T, st Store) int {
	t.Helper()
	n, err := st.Count(t.Context())
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return n
}

// generate runs a generator and fails t on error.
func generate(t *testing.T, g h4r.Generator, q h4r.CandidateQuery) []h4r.Hit {
	t.Helper()
	hits, err := g.Generate(t.Context(), q)
	if err != nil {
		t.Fatalf("%s.Generate(%+v): %v", g.Name(), q, err)
	}
	return hits
}

func hitIDs(hits []h4r.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.Item.ID
	}
	return ids
}

// wantError fails t unless err is an *h4r.Error with the code and, when
// field is not empty, the field.
func wantError(t *testing.T, err error, code, field string) {
	t.Helper()
	var e *h4r.Error
	switch {
	case err == nil:
		t.Fatalf("got no error, want %s (field %q)", code, field)
	case !errors.As(err, &e):
		t.Fatalf("got %v (%T), want an *h4r.Error %s", err, err, code)
	case e.Code != code:
		t.Fatalf("got code %s (%v), want %s", e.Code, err, code)
	case field != "" && e.Field != field:
		t.Fatalf("got field %q (%v), want %q", e.Field, err, field)
	}
}

// canonical is an item as JSON without the store-maintained metadata, for
// comparing what was ingested with what comes back.
func canonical(t *testing.T, it *h4r.Item) string {
	t.Helper()
	c := *it
	m := &c.Metadata
	m.UpdatedAt, m.LastAccessedAt = m.CreatedAt, m.CreatedAt // any fixed value: compare them elsewhere
	m.Version, m.AccessCount, m.ByteSize, m.Tokens = 0, 0, 0, 0
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("encoding item %q: %v", it.ID, err)
	}
	return string(b)
}

// ptr returns a pointer to v, for metadata scores.
func ptr(v float64) *float64 { return &v }

func textItem(id, text string) h4r.Item {
	return h4r.Item{ID: id, Kind: "event", Text: text}
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}
