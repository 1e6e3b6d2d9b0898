package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources/sqlite"
)

// corpus generates item texts whose words follow a Zipf-like distribution,
// as words in real text do: a few very common, a long tail of rare ones.
type corpus struct {
	rng   *rand.Rand
	vocab []string
	zipf  *rand.Zipf
}

// domainWords start the vocabulary, so that the most frequent words look
// like those of test and incident reports.
const domainWords = `the failed test login selector timeout error page button element
	not found retry flaky network request response status checkout payment user session token expired
	database connection pool query slow deploy rollback release build pipeline cache miss memory leak
	crash stack trace null pointer exception assertion expected actual render layout mobile browser
	chrome firefox api endpoint latency spike alert incident fix patch regression migration schema`

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	syllables := strings.Fields("ka lo mi ne ru sa to vi de pa zo fe gu hi ja ce bo")
	vocab := strings.Fields(domainWords)
	for len(vocab) < 5000 {
		var sb strings.Builder
		for range 2 + rng.IntN(3) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		vocab = append(vocab, sb.String())
	}
	return &corpus{rng: rng, vocab: vocab, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))}
}

func (c *corpus) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// items returns n items with ids prefix-0…, 12 to 60 words of text, some
// metadata and, when linked, up to three links to earlier items.
func (c *corpus) items(prefix string, n int, linked bool) []h4r.Item {
	out := make([]h4r.Item, n)
	for i := range out {
		id := fmt.Sprintf("%s-%05d", prefix, i)
		it := h4r.Item{
			ID: id, Kind: []string{"test_failure", "fix", "incident", "note"}[c.rng.IntN(4)],
			Text:    c.words(12 + c.rng.IntN(49)),
			Content: map[string]any{"summary": c.words(8)},
			Metadata: h4r.Metadata{
				Tags:  []string{c.vocab[c.zipf.Uint64()%50]},
				Extra: map[string]any{"status": []string{"failed", "passed"}[c.rng.IntN(2)]},
			},
		}
		if linked && i > 0 {
			for range c.rng.IntN(4) {
				it.Links = append(it.Links, h4r.Link{Type: "caused_by", Target: fmt.Sprintf("%s-%05d", prefix, c.rng.IntN(i))})
			}
		}
		out[i] = it
	}
	return out
}

// loadedStore returns a store holding n generated items.
func loadedStore(b *testing.B, c *corpus, n int, linked bool) *sqlite.Store {
	b.Helper()
	s := openTemp(b)
	items := c.items("item", n, linked)
	for start := 0; start < len(items); start += 500 {
		if _, err := s.Upsert(b.Context(), items[start:min(start+500, len(items))]); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkFullText searches 10,000 items with natural-language queries of
// three to six words, common and rare mixed; the query changes every
// iteration.
func BenchmarkFullText(b *testing.B) {
	c := newCorpus(1)
	s := loadedStore(b, c, 10_000, false)
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = c.words(3 + c.rng.IntN(4))
	}
	for _, bc := range []struct {
		name  string
		query func(i int) h4r.CandidateQuery
	}{
		{"limit_100", func(i int) h4r.CandidateQuery { return h4r.CandidateQuery{Text: queries[i%len(queries)]} }},
		{"limit_10", func(i int) h4r.CandidateQuery { return h4r.CandidateQuery{Text: queries[i%len(queries)], Limit: 10} }},
		{"filtered", func(i int) h4r.CandidateQuery {
			return h4r.CandidateQuery{Text: queries[i%len(queries)], Filters: filtersKindStatus()}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			gen := s.FullText()
			hits, i := 0, 0
			for b.Loop() {
				h, err := gen.Generate(b.Context(), bc.query(i))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(h)
				i++
			}
			b.ReportMetric(float64(hits)/float64(i), "hits/op")
		})
	}
}

func filtersKindStatus() h4r.Filters {
	return h4r.Filters{Kinds: []string{"test_failure"}, Metadata: map[string]any{"status": "failed"}}
}

// BenchmarkGraph walks three hops from three anchors over 10,000 items
// holding 1.5 links each on average.
func BenchmarkGraph(b *testing.B) {
	c := newCorpus(2)
	s := loadedStore(b, c, 10_000, true)
	gen := s.Graph()
	hits, i := 0, 0
	for b.Loop() {
		anchors := []string{fmt.Sprintf("item-%05d", (i*7919)%10_000), fmt.Sprintf("item-%05d", (i*104729)%10_000), fmt.Sprintf("item-%05d", (i*1299709)%10_000)}
		h, err := gen.Generate(b.Context(), h4r.CandidateQuery{Anchors: anchors})
		if err != nil {
			b.Fatal(err)
		}
		hits += len(h)
		i++
	}
	b.ReportMetric(float64(hits)/float64(i), "hits/op")
}

// BenchmarkUpsertBatch writes batches of 100 new items (validation, token
// counting and one transaction each).
func BenchmarkUpsertBatch(b *testing.B) {
	const batchSize = 100
	c := newCorpus(3)
	templates := c.items("t", 1000, true)
	s := openTemp(b)
	batch := make([]h4r.Item, batchSize)
	n := 0
	for b.Loop() {
		for j := range batch {
			batch[j] = templates[(n+j)%len(templates)]
			batch[j].ID = fmt.Sprintf("b%d-%d", n, j)
		}
		if _, err := s.Upsert(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
		n += batchSize
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "items/s")
}
