package affordance

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkSuggestFor judges 100 items of 40 words each (drawn from a
// Zipf vocabulary of 2,000 words, as the latency benchmark's corpus) against
// a three-word query with the default rules: the affordance step of a pack.
func BenchmarkSuggestFor(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 2000)
	cons, vows := "bcdfghjklmnprstvwz", "aeiou"
	for i := range vocab { // syllables, as the latency benchmark's words
		var w strings.Builder
		for range 2 + rng.IntN(3) {
			w.WriteByte(cons[rng.IntN(len(cons))])
			w.WriteByte(vows[rng.IntN(len(vows))])
		}
		vocab[i] = w.String()
	}
	z := rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1))
	phrase := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[z.Uint64()]
		}
		return strings.Join(w, " ")
	}
	ev := make([]Evidence, 100)
	for i := range ev {
		ev[i] = Evidence{ID: fmt.Sprintf("mem-%03d", i), Kind: "note", Text: phrase(40), Score: 1 - float64(i)/100}
	}
	rules, query := DefaultRules(), phrase(3)
	b.Run("alone", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			SuggestFor(rules, query, ev)
		}
	})
	// remembered: stems kept across calls, as a pack.Builder keeps them.
	b.Run("remembered", func(b *testing.B) {
		known := NewStems(1 << 16)
		b.ReportAllocs()
		for b.Loop() {
			SuggestWith(rules, query, ev, known)
		}
	})
}
