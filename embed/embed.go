package embed

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/h4r/h4r"
)

// Embedder is h4r.Embedder, the one interface of an embedder; the cache
// and the generator consume it, Hash and OpenAI implement it.
type Embedder = h4r.Embedder

// Dimension returns the dimension of e's vectors: known up front for Hash,
// found by embedding a probe text otherwise (a remote model says its
// dimension only by answering).
func Dimension(ctx context.Context, e Embedder) (int, error) {
	if d, ok := e.(interface{ Dim() int }); ok && d.Dim() > 0 {
		return d.Dim(), nil
	}
	vecs, err := e.Embed(ctx, []string{"dimension probe"})
	if err != nil {
		return 0, fmt.Errorf("finding the dimension of %s: %w", e.Model(), err)
	}
	if len(vecs) != 1 || len(vecs[0]) == 0 {
		return 0, fmt.Errorf("finding the dimension of %s: the embedder returned no vector", e.Model())
	}
	return len(vecs[0]), nil
}

// NormalizeText is the form of a text that cache keys use: lower-cased,
// runs of white space collapsed to one space, trimmed. Texts that differ
// only in case or spacing share a cached embedding.
func NormalizeText(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), unicode.IsSpace), " ")
}

// normalize scales v to unit length in place and reports whether it could
// (a zero or non-finite vector cannot).
func normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return true
}

// Cosine returns the cosine similarity of two vectors of one dimension; for
// unit vectors it is their dot product. It returns 0 when either is zero.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
