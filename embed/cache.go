package embed

import (
	"context"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/h4r/h4r"
)

// Cache remembers the embeddings of texts it has seen, keyed by the model
// and the normalised text (NormalizeText), in an LRU of fixed size. Agents
// repeat questions, and a cached query costs no call to a remote model. It
// is safe for concurrent use.
type Cache struct {
	next  Embedder
	cache *lru.Cache[string, []float32]
}

// NewCache wraps e with a cache of size entries; size 0 returns e itself.
func NewCache(e Embedder, size int) (Embedder, error) {
	if size < 0 {
		return nil, fmt.Errorf("embedding cache size must be >= 0, got %d", size)
	}
	if size == 0 {
		return e, nil
	}
	c, err := lru.New[string, []float32](size)
	if err != nil {
		return nil, fmt.Errorf("creating the embedding cache: %w", err)
	}
	return &Cache{next: e, cache: c}, nil
}

// Model returns the wrapped embedder's model.
func (c *Cache) Model() string { return c.next.Model() }

// Pin returns a cache of the wrapped embedder's current model alone,
// sharing the entries (see h4r.PinEmbedder): the keys name the model that
// computed each vector.
func (c *Cache) Pin() Embedder {
	next := h4r.PinEmbedder(c.next)
	if next == c.next {
		return c
	}
	return &Cache{next: next, cache: c.cache}
}

// Unwrap returns the wrapped embedder: what embeds texts that should not
// take the place of queries in the cache (the texts of feedback items).
func (c *Cache) Unwrap() Embedder { return c.next }

// Dim returns the wrapped embedder's dimension when it knows it, else 0.
func (c *Cache) Dim() int {
	if d, ok := c.next.(interface{ Dim() int }); ok {
		return d.Dim()
	}
	return 0
}

// Embed answers cached texts from the cache and asks the wrapped embedder
// (pinned, so that a vector is cached under the model that computed it)
// for the rest in one call. Returned vectors are shared with the cache:
// callers must not modify them.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([]string, len(texts))
	var missing []string
	var missingAt []int
	next := h4r.PinEmbedder(c.next)
	model := next.Model()
	for i, t := range texts {
		keys[i] = model + "\x00" + NormalizeText(t)
		if v, ok := c.cache.Get(keys[i]); ok {
			out[i] = v
			continue
		}
		missing = append(missing, t)
		missingAt = append(missingAt, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	vecs, err := next.Embed(ctx, missing)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missing) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", model, len(vecs), len(missing))
	}
	for j, i := range missingAt {
		out[i] = vecs[j]
		c.cache.Add(keys[i], vecs[j])
	}
	return out, nil
}

// Len returns the number of cached embeddings.
func (c *Cache) Len() int { return c.cache.Len() }
