package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/engine"
)

// BenchmarkContextPack measures the whole pack path (full-text and hop
// candidates, ranking, OPA slicing with exact token budgets, pack building)
// through the production wiring, on the demo corpus and on 10,000 generated
// items. Queries rotate so that no cache answers them. Each corpus also
// times the raw full-text candidate query alone ("floor"): the pack path is
// best read as a ratio of it, measured in the same run.
//
//	go test ./engine -run '^$' -bench ContextPack -count 6 | tee new.txt; benchstat old.txt new.txt
func BenchmarkContextPack(b *testing.B) {
	b.Run("demo", func(b *testing.B) {
		a := openDemo(b)
		queries := []string{
			"login test failures with selector issues", "checkout payment iframe flaky", "CI retries decision",
			"storage state expired session", "visual snapshot header", "staging 502 incident",
		}
		benchStages(b, a, queries)
	})
	b.Run("generated-10k", func(b *testing.B) {
		a, err := app.Open(context.Background(), testConfig(b), app.WithClock(fixedClock), app.WithLogger(discardLogger()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Close() })
		corpus := newCorpus(1)
		items := corpus.items(10_000)
		for start := 0; start < len(items); start += 1000 {
			if _, err := a.Store.Upsert(context.Background(), items[start:start+1000]); err != nil {
				b.Fatal(err)
			}
		}
		benchStages(b, a, corpus.queries(64))
	})
}

// benchStages times the raw full-text query (the floor) and the whole pack
// path over the same store and queries.
func benchStages(b *testing.B, a *app.App, queries []string) {
	b.Run("floor-fulltext", func(b *testing.B) {
		gen := a.Store.FullText()
		i := 0
		for b.Loop() {
			if _, err := gen.Generate(context.Background(), h4r.CandidateQuery{Text: queries[i%len(queries)], Limit: engine.DefaultCandidateLimit}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("pack", func(b *testing.B) {
		spec := healer()
		b.ReportAllocs()
		i, results := 0, 0
		for b.Loop() {
			p, err := a.Engine.ContextPack(context.Background(), spec, &h4r.ContextRequest{Query: h4r.Query{Text: queries[i%len(queries)]}})
			if err != nil {
				b.Fatal(err)
			}
			results += len(p.Results)
			i++
		}
		b.ReportMetric(float64(results)/float64(i), "results/op")
	})
}

// corpus generates agent-memory items whose words follow a Zipf
// distribution, as natural text does: a few words are everywhere (the
// non-selective query terms), most are rare.
type corpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newCorpus(seed uint64) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed))
	domain := strings.Fields("login checkout selector button timeout failed flaky retry fixture page locator iframe payment cart session token cookie banner snapshot header staging deploy commit fix decision runbook incident webkit chromium firefox network mock api error assertion expected received element visible hidden click fill navigation")
	vocab := append([]string{}, domain...)
	syllables := strings.Fields("ka lo mi ne so ta ri vu pe da zo ful ber gan tor lin mar quo sel vex")
	for len(vocab) < 5000 {
		n := 2 + rng.IntN(3)
		var w strings.Builder
		for range n {
			w.WriteString(syllables[rng.IntN(len(syllables))])
		}
		vocab = append(vocab, w.String())
	}
	return &corpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1)), vocab: vocab}
}

func (c *corpus) words(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.vocab[c.zipf.Uint64()]
	}
	return strings.Join(ws, " ")
}

func (c *corpus) items(n int) []h4r.Item {
	kinds := []string{"test_failure", "fix", "commit", "decision", "selector_change", "flaky_test", "runbook"}
	out := make([]h4r.Item, n)
	for i := range out {
		f := func() *float64 { v := c.rng.Float64(); return &v }
		it := h4r.Item{
			ID:      fmt.Sprintf("gen-%06d", i),
			Kind:    kinds[c.rng.IntN(len(kinds))],
			Text:    c.words(20 + c.rng.IntN(100)),
			Content: map[string]any{"test": fmt.Sprintf("spec-%d", c.rng.IntN(500)), "detail": c.words(10)},
			Metadata: h4r.Metadata{
				CreatedAt:  demoNow.Add(-time.Duration(c.rng.IntN(180*24)) * time.Hour),
				Importance: f(), Trust: f(), Sensitivity: f(), Novelty: f(),
				Tags: []string{kinds[c.rng.IntN(len(kinds))]},
			},
		}
		if c.rng.IntN(5) == 0 {
			it.Metadata.ContainsPII = true
			it.Metadata.PIIFields = []string{"$.content.personalData"}
			it.Content["personalData"] = map[string]any{"email": fmt.Sprintf("user%d@example.com", i)}
		}
		for l := c.rng.IntN(3); l > 0 && i > 0; l-- {
			it.Links = append(it.Links, h4r.Link{Type: "caused_by", Target: fmt.Sprintf("gen-%06d", c.rng.IntN(i))})
		}
		out[i] = it
	}
	return out
}

func (c *corpus) queries(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.words(3 + c.rng.IntN(4))
	}
	return out
}

// BenchmarkPackJSON builds and encodes the packs of rotating queries over
// 10,000 generated items, explaining the kept items only (the default) or
// every candidate (explain "all"), and reports the encoded bytes per pack:
// what leaves the server for one ten-item pack, and what encoding it costs.
//
//	go test ./engine -run '^$' -bench PackJSON -count 6 | tee out.txt; benchstat out.txt
func BenchmarkPackJSON(b *testing.B) {
	a, err := app.Open(context.Background(), testConfig(b), app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	corpus := newCorpus(1)
	items := corpus.items(10_000)
	for start := 0; start < len(items); start += 1000 {
		if _, err := a.Store.Upsert(context.Background(), items[start:start+1000]); err != nil {
			b.Fatal(err)
		}
	}
	queries := corpus.queries(64)
	for _, explain := range []string{h4r.ExplainKept, h4r.ExplainAll} {
		b.Run("explain="+explain, func(b *testing.B) {
			var bytes, packs int
			i := 0
			for b.Loop() {
				req := h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: queries[i%len(queries)]}, Explain: explain}
				i++
				plan, err := req.Plan("")
				if err != nil {
					b.Fatal(err)
				}
				p, err := a.Engine.Run(context.Background(), healer(), plan)
				if err != nil {
					b.Fatal(err)
				}
				raw, err := json.Marshal(p)
				if err != nil {
					b.Fatal(err)
				}
				bytes += len(raw)
				packs++
			}
			b.ReportMetric(float64(bytes)/float64(packs), "bytes/pack")
		})
	}
}
