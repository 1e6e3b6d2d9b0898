package app_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
)

// zipfTexts returns n texts of 12 to 60 words drawn from a Zipf-distributed
// vocabulary (a few very common words, a long tail), and query texts of 3
// to 6 words from the same vocabulary.
func zipfTexts(n, queries int) ([]string, []string) {
	rng := rand.New(rand.NewPCG(5, 6))
	syllables := strings.Fields("ka lo mi ne ru sa to vi de pa zo fe gu hi ja ce bo")
	vocab := strings.Fields(`the failed test login selector timeout error page button element not found retry
		flaky network request response status checkout payment user session token expired database connection`)
	for len(vocab) < 5000 {
		var sb strings.Builder
		for range 2 + rng.IntN(3) {
			sb.WriteString(syllables[rng.IntN(len(syllables))])
		}
		vocab = append(vocab, sb.String())
	}
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	texts := make([]string, n)
	for i := range texts {
		texts[i] = words(12 + rng.IntN(49))
	}
	qs := make([]string, queries)
	for i := range qs {
		qs[i] = words(3 + rng.IntN(4))
	}
	return texts, qs
}

// BenchmarkPackFusion is the whole pack path (candidates, ranking, policy,
// budgets, pack) on 10,000 generated items, keyword (full-text only) beside
// hybrid (full-text and vectors, fused) and semantic (vectors only): the
// fused request's overhead is hybrid's time over keyword's in the same run.
//
//	go test ./app -run '^$' -bench PackFusion -benchtime 100x -count 8 | tee fusion.txt
//	benchstat -col /type fusion.txt
func BenchmarkPackFusion(b *testing.B) {
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	a, err := app.Open(b.Context(), cfg, app.WithLogger(quiet))
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	texts, queries := zipfTexts(10_000, 64)
	items := make([]h4r.Item, len(texts))
	for i, text := range texts {
		items[i] = h4r.Item{ID: fmt.Sprintf("item-%05d", i), Kind: "note", Text: text}
	}
	for start := 0; start < len(items); start += 1000 {
		if _, err := a.Store.Upsert(b.Context(), items[start:min(start+1000, len(items))]); err != nil {
			b.Fatal(err)
		}
	}
	spec := h4r.Specialist{ID: "bench", SecurityLevel: h4r.Internal}
	// The vectors are loaded into memory in the background at Open; the
	// first vector search waits for that. Not part of a request's cost.
	if _, err := a.Engine.ContextPack(b.Context(), spec, &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QuerySemantic, Text: "warm"}}); err != nil {
		b.Fatal(err)
	}
	for _, typ := range []h4r.QueryType{h4r.QueryKeyword, h4r.QueryHybrid, h4r.QuerySemantic} {
		b.Run("type="+string(typ), func(b *testing.B) {
			i := 0
			for b.Loop() {
				req := &h4r.ContextRequest{Query: h4r.Query{Type: typ, Text: queries[i%len(queries)]}, Limit: 10}
				p, err := a.Engine.ContextPack(b.Context(), spec, req)
				if err != nil {
					b.Fatal(err)
				}
				if p.Status != h4r.StatusOK {
					b.Fatalf("status %s: %v", p.Status, p.Explainability.Warnings)
				}
				i++
			}
		})
	}
}
