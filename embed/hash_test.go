package embed_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
)

func newHash(t testing.TB, opts ...embed.HashOption) *embed.Hash {
	t.Helper()
	h, err := embed.NewHash(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestHashVectors(t *testing.T) {
	h := newHash(t)
	for _, text := range []string{"login test failed", "Ünïcödé wörds ñ", "x", "x y z 1 2 3"} {
		v := h.Vector(text)
		if len(v) != embed.DefaultHashDim {
			t.Fatalf("%q: %d dimensions", text, len(v))
		}
		if n := norm(v); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: norm %v, want 1", text, n)
		}
		if !slices.Equal(v, h.Vector(text)) {
			t.Errorf("%q: two calls differ", text)
		}
	}
	if n := norm(h.Vector("  ,;! the of  ")); n != 0 {
		t.Errorf("text without words (or only stop words): norm %v, want the zero vector", n)
	}
	if !slices.Equal(h.Vector("Login  TEST"), h.Vector("login test")) {
		t.Error("case and spacing change the vector")
	}
}

// What the hashing embedder is for: a variant or a shared phrase scores
// closer than an unrelated text. Each case's near text must beat its far
// text by a margin.
func TestHashSimilarity(t *testing.T) {
	h := newHash(t)
	for _, tc := range []struct {
		name, query, near, far string
	}{
		{"morphological variant", "optimize", "optimization", "login"},
		{"plural and verb forms", "failing selectors", "selector failed", "payment gateway"},
		{"shared phrase beats shared words", "connection pool exhausted", "the connection pool was exhausted", "pool of connection strings exhausted nothing"},
		{"stop words carry no topic", "the error of the page", "page error", "the of the"},
		{"typo", "authentication", "authentcation", "authorisation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := h.Vector(tc.query)
			near, far := embed.Cosine(q, h.Vector(tc.near)), embed.Cosine(q, h.Vector(tc.far))
			if near <= far+0.05 {
				t.Errorf("cos(%q, %q) = %.3f, not clearly above cos(%q, %q) = %.3f", tc.query, tc.near, near, tc.query, tc.far, far)
			}
		})
	}
}

// What it cannot do, so that the documentation stays honest: synonyms
// sharing no letters are as far apart as unrelated words.
func TestHashDoesNotKnowSynonyms(t *testing.T) {
	h := newHash(t)
	if c := embed.Cosine(h.Vector("car"), h.Vector("automobile")); c > 0.2 {
		t.Errorf("cos(car, automobile) = %.3f: the documentation says synonyms are not captured", c)
	}
}

func TestHashModelNamesSettings(t *testing.T) {
	a, b := newHash(t), newHash(t, embed.WithHashDim(256))
	c := newHash(t, embed.WithFeatureWeights(1, 0, 1))
	if a.Model() == b.Model() || a.Model() == c.Model() || b.Model() == c.Model() {
		t.Errorf("settings that change vectors share a model name: %s, %s, %s", a.Model(), b.Model(), c.Model())
	}
	if a.Model() != newHash(t).Model() {
		t.Error("the same settings give different model names")
	}
}

func TestNewHashRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opt   embed.HashOption
		field string
	}{
		{"dimension too small", embed.WithHashDim(4), "dim"},
		{"dimension too large", embed.WithHashDim(1 << 20), "dim"},
		{"n-grams inverted", embed.WithCharNGrams(5, 3), "charNGrams"},
		{"n-grams from zero", embed.WithCharNGrams(0, 3), "charNGrams"},
		{"negative weight", embed.WithFeatureWeights(-1, 0.5, 1), "weights.unigram"},
		{"NaN weight", embed.WithFeatureWeights(1, math.NaN(), 1), "weights.bigram"},
		{"no features", embed.WithFeatureWeights(0, 0, 0), "weights"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := embed.NewHash(tc.opt)
			var he *h4r.Error
			if !errors.As(err, &he) || he.Field != tc.field {
				t.Fatalf("err = %v, want an *h4r.Error on %s", err, tc.field)
			}
		})
	}
}

func TestHashEmbedHonoursCancel(t *testing.T) {
	h := newHash(t)
	ctx, cancel := contextCancelled(t)
	cancel()
	if _, err := h.Embed(ctx, []string{"a"}); err == nil {
		t.Fatal("Embed with a cancelled context succeeded")
	}
}

// Embed splits a batch across cores: each vector must be exactly the one
// Vector makes of its text alone, in input order, whatever the split
// (batch sizes below, at and past one worker's chunk).
func TestHashEmbedEqualsVector(t *testing.T) {
	h := newHash(t)
	words := []string{"login", "page", "checkout", "café", "résumé", "timeout", "the", "of", "selector", "日本語"}
	for _, n := range []int{0, 1, 63, 64, 65, 1000} {
		t.Run(fmt.Sprintf("texts=%d", n), func(t *testing.T) {
			texts := make([]string, n)
			for i := range texts {
				var sb strings.Builder
				for j := range i%13 + 1 {
					sb.WriteString(words[(i*7+j*3)%len(words)])
					sb.WriteByte(' ')
				}
				texts[i] = sb.String()
			}
			got, err := h.Embed(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d vectors for %d texts", len(got), n)
			}
			for i, text := range texts {
				if !slices.Equal(got[i], h.Vector(text)) {
					t.Fatalf("vector %d (%q) differs from Vector's", i, text)
				}
			}
		})
	}
}
