package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/h4r/h4r"
)

// Index finds the items nearest to a vector: the SQLite store's exact
// search, or Qdrant. Hits come best first, with the cosine similarity as
// Score; only vectors of model are compared; filters apply as in full-text
// search; hits under minScore are left out.
type Index interface {
	SearchVectors(ctx context.Context, model string, vector []float32, filters h4r.Filters, limit int, minScore float64) ([]h4r.Hit, error)
}

// DefaultMinScore is the cosine under which a vector hit is not a
// candidate. Nearly every text shares some hashed feature with the query;
// without a floor, rank-based fusion would credit the 100th-nearest
// unrelated item as much as bm25's 100th hit.
const DefaultMinScore = 0.05

// Generator is the "vector" candidate generator.
type Generator struct {
	embedder Embedder
	index    Index
	timeout  time.Duration
	minScore float64
	maxHits  int
	fallback h4r.Generator
}

// GeneratorOption configures NewGenerator.
type GeneratorOption func(*Generator)

// WithQueryTimeout bounds the query's embedding (default 500 ms). The
// search itself runs under the engine's generator deadline.
func WithQueryTimeout(d time.Duration) GeneratorOption { return func(g *Generator) { g.timeout = d } }

// WithMinScore sets the cosine floor of a hit (default DefaultMinScore).
func WithMinScore(s float64) GeneratorOption { return func(g *Generator) { g.minScore = s } }

// WithMaxHits caps the hits of one search below the query's limit (0, the
// default: the query's limit). On scifact, fusing the 20 nearest rather
// than 100 kept full-text's Recall@100 and raised nDCG@10 on both splits
// (BenchmarkSciFact): far neighbours of a lexical embedder add noise.
func WithMaxHits(n int) GeneratorOption { return func(g *Generator) { g.maxHits = n } }

// WithFallback sets the generator that answers when the query cannot be
// embedded in time (the store's full-text search), so that a semantic
// request degrades to full-text results with a warning instead of coming
// back empty.
func WithFallback(f h4r.Generator) GeneratorOption { return func(g *Generator) { g.fallback = f } }

// NewGenerator returns the vector generator of e (usually a Cache) over ix.
func NewGenerator(e Embedder, ix Index, opts ...GeneratorOption) (*Generator, error) {
	g := &Generator{embedder: e, index: ix, timeout: DefaultTimeout, minScore: DefaultMinScore}
	for _, o := range opts {
		o(g)
	}
	switch {
	case e == nil || ix == nil:
		return nil, errors.New("vector generator: an embedder and an index are required")
	case g.timeout <= 0:
		return nil, h4r.Errorf(h4r.EINVALID, "timeout", "query embedding timeout must be positive, got %v", g.timeout)
	case g.minScore < -1 || g.minScore > 1:
		return nil, h4r.Errorf(h4r.EINVALID, "minScore", "minimum cosine must be in [-1, 1], got %v", g.minScore)
	case g.maxHits < 0:
		return nil, h4r.Errorf(h4r.EINVALID, "maxHits", "max hits must be >= 0, got %d", g.maxHits)
	}
	return g, nil
}

// Name returns h4r.GenVector.
func (g *Generator) Name() string { return h4r.GenVector }

// Generate embeds q.Text and returns the nearest items. When the embedding
// fails or is late and a fallback is set, it returns the fallback's hits
// with a *h4r.FallbackError, which the engine reports as a warning.
func (g *Generator) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	// One model embeds the query and names the vectors it is compared
	// with, even if the embedder learns a new one meanwhile.
	e := h4r.PinEmbedder(g.embedder)
	ectx, cancel := context.WithTimeout(ctx, g.timeout)
	vecs, err := e.Embed(ectx, []string{q.Text})
	cancel()
	if err == nil && (len(vecs) != 1 || len(vecs[0]) == 0) {
		err = fmt.Errorf("embedder %s returned no vector", e.Model())
	}
	if errors.Is(err, ErrNotLearned) {
		// A corpus too small to learn from has no vectors yet: no hits,
		// so full-text answers alone (not twice, as a fallback would),
		// and no warning on every request of a new store.
		return nil, nil
	}
	if err != nil {
		err = fmt.Errorf("embedding the query: %w", err)
		if g.fallback == nil || ctx.Err() != nil {
			return nil, err
		}
		hits, ferr := g.fallback.Generate(ctx, q)
		if ferr != nil {
			return nil, errors.Join(err, fmt.Errorf("fallback %s: %w", g.fallback.Name(), ferr))
		}
		return hits, &h4r.FallbackError{Primary: "query embedding (" + e.Model() + ")", Fallback: g.fallback.Name() + " search", Err: err}
	}
	limit := q.Limit
	if g.maxHits > 0 && (limit == 0 || limit > g.maxHits) {
		limit = g.maxHits
	}
	hits, err := g.index.SearchVectors(ctx, e.Model(), vecs[0], q.Filters, limit, g.minScore)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return hits, nil
}

// GenerateNear is Generate with the query vector moved toward texts, the
// first pass's best items (pseudo-relevance feedback on the vector side,
// Rocchio's update): the query becomes (1−weight)·q + weight·mean(texts),
// every vector a unit one, and is searched as Generate searches. The
// words of the texts never reach full-text search; only the direction they
// share moves the vector. One model embeds the query and the texts; the
// texts bypass the query cache, so that they do not evict queries. It has
// no fallback: the caller keeps its first pass when it fails.
func (g *Generator) GenerateNear(ctx context.Context, q h4r.CandidateQuery, texts []string, weight float64) ([]h4r.Hit, error) {
	e := h4r.PinEmbedder(g.embedder)
	ectx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	qv, err := e.Embed(ectx, []string{q.Text})
	if err != nil {
		return nil, fmt.Errorf("embedding the query: %w", err)
	}
	if len(qv) != 1 || len(qv[0]) == 0 {
		return nil, fmt.Errorf("embedder %s returned no vector for the query", e.Model())
	}
	docs := e
	if u, ok := e.(interface{ Unwrap() Embedder }); ok {
		docs = u.Unwrap()
	}
	tv, err := docs.Embed(ectx, texts)
	if err != nil {
		return nil, fmt.Errorf("embedding the feedback texts: %w", err)
	}
	v := Rocchio(qv[0], tv, weight)
	limit := q.Limit
	if g.maxHits > 0 && (limit == 0 || limit > g.maxHits) {
		limit = g.maxHits
	}
	hits, err := g.index.SearchVectors(ctx, e.Model(), v, q.Filters, limit, g.minScore)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return hits, nil
}

// Rocchio returns the unit vector of (1−weight)·q + weight·mean(near):
// q moved toward the mean of the vectors near. Vectors of another length
// than q's, and zero ones (a text with no known word), are left out of
// the mean; with none left, or a zero result, it returns q.
func Rocchio(q []float32, near [][]float32, weight float64) []float32 {
	mean := make([]float64, len(q))
	n := 0
	for _, v := range near {
		if len(v) != len(q) || isZero(v) {
			continue
		}
		n++
		for i, x := range v {
			mean[i] += float64(x)
		}
	}
	if n == 0 || weight <= 0 {
		return q
	}
	out := make([]float32, len(q))
	var sum float64
	for i := range mean {
		x := (1-weight)*float64(q[i]) + weight*mean[i]/float64(n)
		mean[i] = x
		sum += x * x
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return q
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range mean {
		out[i] = float32(x * inv)
	}
	return out
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}
