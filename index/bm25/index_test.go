package bm25_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/index/bm25"
)

var algorithms = []bm25.Algorithm{bm25.MaxScore, bm25.BlockMaxWAND, bm25.Exhaustive}

// model is what the index should hold: the live documents' texts.
type model map[uint32]string

// randomCorpus drives an index and its model through random adds, replaces
// and deletes. Words come from a small vocabulary with a skewed
// distribution and documents are short, so that many documents are equal
// and their scores tie exactly.
type randomCorpus struct {
	rng   *rand.Rand
	vocab []string
	zipf  *rand.Zipf
	ids   uint32 // ids are drawn from [0, ids): a drawn id that exists is replaced
	maxLn int
}

func newRandomCorpus(seed uint64, vocab int, ids uint32, maxLen int) *randomCorpus {
	rng := rand.New(rand.NewPCG(seed, 7))
	words := make([]string, vocab)
	for i := range words {
		words[i] = fmt.Sprintf("w%dq", i) // a word the stemmer leaves alone
	}
	return &randomCorpus{rng: rng, vocab: words, zipf: rand.NewZipf(rng, 1.3, 1, uint64(vocab-1)), ids: ids, maxLn: maxLen}
}

func (c *randomCorpus) text() string {
	w := make([]string, 1+c.rng.IntN(c.maxLn))
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// step applies one random write to x and m.
func (c *randomCorpus) step(t testing.TB, x *bm25.Index, m model) {
	id := c.rng.Uint32N(c.ids)
	was, had := m[id]
	if got, err := x.Remove(id, was); err != nil || got != had {
		t.Fatalf("Remove(%d) = %v, %v; the document existed: %v", id, got, err, had)
	}
	delete(m, id)
	if c.rng.IntN(5) == 0 {
		return
	}
	text := c.text()
	if err := x.Add(id, text); err != nil {
		t.Fatal(err)
	}
	m[id] = text
}

func (c *randomCorpus) query() map[string]int {
	q := map[string]int{}
	for range 1 + c.rng.IntN(5) {
		q[c.vocab[c.rng.IntN(len(c.vocab))]] = 1 + c.rng.IntN(3)
	}
	if c.rng.IntN(8) == 0 {
		q["absent"] = 1 // a term no document holds is ignored
	}
	return q
}

// options draws a limit, a tie order (none, or a scrambled one) and a
// filter (none, or about two in three ids).
func (c *randomCorpus) options() (int, []bm25.SearchOptions) {
	k := []int{1, 2, 3, 10, 50, 1000}[c.rng.IntN(6)]
	var o bm25.SearchOptions
	if c.rng.IntN(2) == 0 {
		o.Tie = func(a, b uint32) int { return cmp.Compare(a*2654435761, b*2654435761) }
	}
	if c.rng.IntN(2) == 0 {
		o.Accept = func(id uint32) bool { return id%3 != 0 }
	}
	opts := make([]bm25.SearchOptions, len(algorithms))
	for i, a := range algorithms {
		opts[i] = o
		opts[i].Algorithm = a
	}
	return k, opts
}

// checkSearch checks that every algorithm returns Reference's hits, scores
// and order exactly.
func checkSearch(t testing.TB, x *bm25.Index, q map[string]int, k int, opts []bm25.SearchOptions) {
	t.Helper()
	want, err := x.Reference(q, k, opts[0])
	if err != nil {
		t.Fatal(err)
	}
	tie := opts[0].Tie
	if tie == nil {
		tie = func(a, b uint32) int { return cmp.Compare(a, b) }
	}
	for i := 1; i < len(want); i++ {
		a, b := want[i-1], want[i]
		if a.Score < b.Score || a.Score == b.Score && tie(a.ID, b.ID) >= 0 {
			t.Fatalf("Reference ranks %v before %v", a, b)
		}
	}
	if opts[0].Accept != nil {
		for _, h := range want {
			if !opts[0].Accept(h.ID) {
				t.Fatalf("Reference returned %v, which the filter rejects", h)
			}
		}
	}
	for _, o := range opts {
		got, err := x.Search(context.Background(), q, k, o)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%v, query %v, k %d, filtered %v, tie order %v:\n got %v\nwant %v",
				o.Algorithm, q, k, o.Accept != nil, o.Tie != nil, got, want)
		}
	}
}

// bm25Of computes BM25 from the model's texts directly, the textbook way,
// for every live document holding a query term.
func bm25Of(m model, q map[string]int) map[uint32]float64 {
	tf := map[uint32]map[string]int{}
	length := map[uint32]int{}
	df := map[string]int{}
	total := 0
	for id, text := range m {
		terms := bm25.Analyze(nil, text)
		length[id] = len(terms)
		total += len(terms)
		tf[id] = map[string]int{}
		for _, t := range terms {
			if tf[id][t] == 0 {
				df[t]++
			}
			tf[id][t]++
		}
	}
	n := float64(len(m))
	avg := float64(total) / n
	scores := map[uint32]float64{}
	for id := range m {
		for t, qtf := range q {
			if f := float64(tf[id][t]); f > 0 {
				idf := math.Log(1 + (n-float64(df[t])+0.5)/(float64(df[t])+0.5))
				scores[id] += float64(qtf) * idf * f * 2.2 / (f + 1.2*(0.25+0.75*float64(length[id])/avg))
			}
		}
	}
	return scores
}

// TestAlgorithmsEqualReference is the property test of the pruned search:
// on random corpora with many exact ties, with adds, replaces and deletes
// interleaved with queries (and so compactions, block-bound
// recomputations and trims), every algorithm returns exactly Reference's hits. And
// Reference is BM25 over the live documents: equal to the textbook formula
// computed from the texts, and bit for bit equal to an index built from
// scratch on them.
func TestAlgorithmsEqualReference(t *testing.T) {
	for _, tc := range []struct {
		name          string
		vocab         int
		ids           uint32
		maxLen, steps int
	}{
		{"tiny vocabulary, short documents", 6, 60, 4, 3000},
		{"small vocabulary, ids reused", 12, 400, 8, 6000},
		{"long posting lists across many blocks", 40, 5000, 12, 12000},
	} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/seed %d", tc.name, seed), func(t *testing.T) {
				c := newRandomCorpus(seed, tc.vocab, tc.ids, tc.maxLen)
				x, m := bm25.New(), model{}
				for step := range tc.steps {
					c.step(t, x, m)
					if step%500 == 499 { // writes go on after a store trims its loaded index
						x.Trim()
					}
					if step%7 == 0 {
						k, opts := c.options()
						checkSearch(t, x, c.query(), k, opts)
					}
				}
				checkAgainstModel(t, x, m, c)
			})
		}
	}
}

func checkAgainstModel(t *testing.T, x *bm25.Index, m model, c *randomCorpus) {
	t.Helper()
	if x.Len() != len(m) {
		t.Fatalf("Len() = %d, the model holds %d", x.Len(), len(m))
	}
	fresh := bm25.New()
	for id, text := range m {
		if err := fresh.Add(id, text); err != nil {
			t.Fatal(err)
		}
	}
	for range 50 {
		q := c.query()
		all, err := x.Reference(q, math.MaxInt32, bm25.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := bm25Of(m, q)
		if len(all) != len(want) {
			t.Fatalf("query %v: Reference finds %d documents, the model %d", q, len(all), len(want))
		}
		for _, h := range all {
			if w, ok := want[h.ID]; !ok || math.Abs(h.Score-w) > 1e-9*w+1e-8 {
				t.Fatalf("query %v: document %d scores %v, the textbook formula %v", q, h.ID, h.Score, w)
			}
		}
		rebuilt, err := fresh.Reference(q, math.MaxInt32, bm25.SearchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(all, rebuilt) {
			t.Fatalf("query %v: the updated index and one built from scratch differ:\n%v\n%v", q, all, rebuilt)
		}
	}
}

// TestCompaction checks that dead slots are reclaimed (a quarter at most
// stay) and searches stay exact across it.
func TestCompaction(t *testing.T) {
	c := newRandomCorpus(9, 20, 1000, 10)
	x := bm25.New()
	texts := make([]string, 1000)
	for id := range uint32(1000) {
		texts[id] = c.text()
		if err := x.Add(id, texts[id]); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		for id := range uint32(1000) {
			if id%2 == 0 { // replace
				if _, err := x.Remove(id, texts[id]); err != nil {
					t.Fatal(err)
				}
				texts[id] = c.text()
				if err := x.Add(id, texts[id]); err != nil {
					t.Fatal(err)
				}
			}
		}
		st := x.Stats()
		if st.Docs != 1000 || 4*st.DeadSlots > st.Docs+st.DeadSlots {
			t.Fatalf("round %d: %+v, want 1000 documents and at most a quarter of slots dead", round, st)
		}
		k, opts := c.options()
		checkSearch(t, x, c.query(), k, opts)
	}
	for id := range uint32(1000) {
		if _, err := x.Remove(id, texts[id]); err != nil {
			t.Fatal(err)
		}
	}
	if st := x.Stats(); st.Docs != 0 || st.Terms != 0 || st.Postings != 0 {
		t.Errorf("after deleting everything: %+v, want an empty index", st)
	}
	if hits, err := x.Search(t.Context(), map[string]int{c.vocab[0]: 1}, 10, bm25.SearchOptions{}); err != nil || len(hits) != 0 {
		t.Errorf("search of an emptied index = %v, %v; want nothing", hits, err)
	}
}

// TestDeleteTakesTheIndexedText checks that a delete given a text whose
// analysis is not the indexed one (other terms, frequencies or length) is
// refused and changes nothing, that the same words in another order are
// the same analysis, and that a put over a held document is refused.
func TestDeleteTakesTheIndexedText(t *testing.T) {
	const indexed = "cache miss on the cache"
	for _, tc := range []struct {
		name, was string
		ok        bool
	}{
		{"the indexed text", indexed, true},
		{"the same words in another order", "cache the on miss cache", true},
		{"another frequency", "cache miss on the", false},
		{"another length", "cache miss on the cache cache", false},
		{"a word more", "cache miss on the cache hit", false},
		{"a word unknown to the index", "cache miss on the zebra", false},
		{"nothing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := bm25.New()
			for id, text := range []string{indexed, "cache hit", "slow miss"} {
				if err := x.Add(uint32(id), text); err != nil {
					t.Fatal(err)
				}
			}
			q := map[string]int{"cach": 1, "miss": 1}
			before, err := x.Reference(q, 10, bm25.SearchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Remove(0, tc.was)
			if tc.ok {
				if err != nil || !got {
					t.Fatalf("Remove = %v, %v; want the document deleted", got, err)
				}
				if x.Len() != 2 {
					t.Fatalf("Len = %d after the delete, want 2", x.Len())
				}
				return
			}
			var e *h4r.Error
			if got || !errors.As(err, &e) || e.Code != h4r.EINVALID {
				t.Fatalf("Remove = %v, %v; want %s and no delete", got, err, h4r.EINVALID)
			}
			after, err := x.Reference(q, 10, bm25.SearchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if x.Len() != 3 || fmt.Sprint(before) != fmt.Sprint(after) {
				t.Fatalf("a refused delete changed the index: %d documents, hits %v, were %v", x.Len(), after, before)
			}
		})
	}
	x := bm25.New()
	if err := x.Add(7, indexed); err != nil {
		t.Fatal(err)
	}
	var e *h4r.Error
	if err := x.Add(7, "cache hit"); !errors.As(err, &e) || e.Code != h4r.EINVALID {
		t.Fatalf("Add over a held document: error %v, want %s", err, h4r.EINVALID)
	}
}

func TestSearchInput(t *testing.T) {
	x := bm25.New()
	for id, text := range []string{"cache miss", "cache hit", "slow query"} {
		if err := x.Add(uint32(id), text); err != nil {
			t.Fatal(err)
		}
	}
	q := bm25.Query(analysis.New(nil).Terms("cache"))
	for _, tc := range []struct {
		name  string
		terms map[string]int
		k     int
		opts  bm25.SearchOptions
		field string // "" for no error
		hits  int
	}{
		{"negative limit", q, -1, bm25.SearchOptions{}, "limit", 0},
		{"zero query frequency", map[string]int{"cach": 0}, 10, bm25.SearchOptions{}, "terms", 0},
		{"unknown algorithm", q, 10, bm25.SearchOptions{Algorithm: 99}, "algorithm", 0},
		{"zero limit finds nothing", q, 0, bm25.SearchOptions{}, "", 0},
		{"no terms find nothing", map[string]int{}, 10, bm25.SearchOptions{}, "", 0},
		{"unknown term finds nothing", map[string]int{"zebra": 1}, 10, bm25.SearchOptions{}, "", 0},
		{"limit cuts", q, 1, bm25.SearchOptions{}, "", 1},
		{"filter applies", q, 10, bm25.SearchOptions{Accept: func(id uint32) bool { return id != 0 }}, "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := x.Search(t.Context(), tc.terms, tc.k, tc.opts)
			if tc.field != "" {
				var e *h4r.Error
				if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != tc.field {
					t.Fatalf("error = %v, want %s on field %q", err, h4r.EINVALID, tc.field)
				}
				return
			}
			if err != nil || len(hits) != tc.hits {
				t.Fatalf("Search = %v, %v; want %d hits", hits, err, tc.hits)
			}
		})
	}
}

func TestSearchCancelled(t *testing.T) {
	x := bm25.New()
	for id := range uint32(3000) {
		if err := x.Add(id, "cache miss"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, a := range algorithms {
		if _, err := x.Search(ctx, map[string]int{"cach": 1}, 10, bm25.SearchOptions{Algorithm: a}); !errors.Is(err, context.Canceled) {
			t.Errorf("%v on a cancelled context: error %v, want context.Canceled", a, err)
		}
	}
}

// TestConcurrentSearchAndWrite runs searches beside writes; with -race it
// checks the locking, and each result must be a well-formed top k.
func TestConcurrentSearchAndWrite(t *testing.T) {
	c := newRandomCorpus(11, 20, 2000, 10)
	x, m := bm25.New(), model{}
	for range 2000 {
		c.step(t, x, m)
	}
	queries := make([]map[string]int, 50)
	for i := range queries {
		queries[i] = c.query()
	}
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for i := range 300 {
				hits, err := x.Search(context.Background(), queries[(i+r)%len(queries)], 20, bm25.SearchOptions{Algorithm: algorithms[i%len(algorithms)]})
				if err != nil {
					t.Error(err)
					return
				}
				if len(hits) > 20 || !slices.IsSortedFunc(hits, func(a, b bm25.Hit) int { return cmp.Compare(b.Score, a.Score) }) {
					t.Errorf("malformed top 20: %v", hits)
					return
				}
			}
		})
	}
	for range 3000 {
		c.step(t, x, m) // the writer is this goroutine
	}
	wg.Wait()
}

// TestLargeTermFrequencies: frequencies of 255 and more (kept apart from
// the one-byte ones) score as what they are, before and after compaction.
// A document made of one word repeated n times scores higher the larger n,
// so the ranking is by n; a frequency cut at 255 would reverse it above.
func TestLargeTermFrequencies(t *testing.T) {
	repeats := []int{1000, 300, 256, 255, 254, 3}
	x := bm25.New()
	for i, n := range repeats {
		if err := x.Add(uint32(i), strings.Repeat("alpha ", n)); err != nil {
			t.Fatal(err)
		}
	}
	for id := uint32(100); id < 140; id++ { // to delete: compaction
		if err := x.Add(id, "filler words here alpha"); err != nil {
			t.Fatal(err)
		}
	}
	check := func(t *testing.T) {
		for _, alg := range []bm25.Algorithm{bm25.MaxScore, bm25.BlockMaxWAND, bm25.Exhaustive} {
			hits, err := x.Search(t.Context(), map[string]int{"alpha": 1}, len(repeats), bm25.SearchOptions{Algorithm: alg})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != len(repeats) {
				t.Fatalf("%v: %d hits, want %d", alg, len(hits), len(repeats))
			}
			for i, h := range hits {
				if h.ID != uint32(i) || i > 0 && h.Score >= hits[i-1].Score {
					t.Fatalf("%v: hits %+v, want ids 0..%d by strictly falling score (repeats %v)", alg, hits, len(repeats)-1, repeats)
				}
			}
		}
	}
	t.Run("as written", check)
	for id := uint32(100); id < 140; id++ {
		if _, err := x.Remove(id, "filler words here alpha"); err != nil {
			t.Fatal(err)
		}
	}
	if st := x.Stats(); st.DeadSlots != 0 {
		t.Fatalf("no compaction after deleting most documents: %+v", st)
	}
	t.Run("after compaction", check)
}
