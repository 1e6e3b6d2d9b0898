package embed_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/h4r/h4r/embed"
)

// countingEmbedder embeds with Hash and records the texts it was asked.
type countingEmbedder struct {
	*embed.Hash
	mu    sync.Mutex
	asked []string
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.asked = append(c.asked, texts...)
	c.mu.Unlock()
	return c.Hash.Embed(ctx, texts)
}

func contextCancelled(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithCancel(t.Context())
}

func TestCache(t *testing.T) {
	inner := &countingEmbedder{Hash: newHash(t)}
	e, err := embed.NewCache(inner, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	steps := []struct {
		name      string
		texts     []string
		wantAsked []string // what reached the inner embedder in this step
	}{
		{"first time asks", []string{"login failed"}, []string{"login failed"}},
		{"same text is cached", []string{"login failed"}, nil},
		{"case and spaces normalise", []string{"  Login   FAILED "}, nil},
		{"mixed batch asks only the new", []string{"login failed", "checkout slow"}, []string{"checkout slow"}},
		{"third text evicts the oldest", []string{"cache miss"}, []string{"cache miss"}},
		{"evicted text is asked again", []string{"login failed"}, []string{"login failed"}},
	}
	for _, st := range steps {
		inner.asked = nil
		vecs, err := e.Embed(ctx, st.texts)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !slices.Equal(inner.asked, st.wantAsked) {
			t.Errorf("%s: inner embedder asked %q, want %q", st.name, inner.asked, st.wantAsked)
		}
		for i, text := range st.texts {
			if !slices.Equal(vecs[i], inner.Vector(text)) {
				t.Errorf("%s: vector of %q is not its own", st.name, text)
			}
		}
	}
}

// Two models never share an entry, even for one text.
func TestCacheKeyedByModel(t *testing.T) {
	a, err := embed.NewCache(newHash(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	other := newHash(t, embed.WithHashDim(64))
	b, err := embed.NewCache(other, 10)
	if err != nil {
		t.Fatal(err)
	}
	va, _ := a.Embed(t.Context(), []string{"x"})
	vb, _ := b.Embed(t.Context(), []string{"x"})
	if len(va[0]) == len(vb[0]) {
		t.Fatal("the two models should differ in dimension")
	}
}

func TestCacheSizeZeroIsNoCache(t *testing.T) {
	inner := newHash(t)
	e, err := embed.NewCache(inner, 0)
	if err != nil || e != embed.Embedder(inner) {
		t.Fatalf("NewCache(…, 0) = %v, %v; want the embedder itself", e, err)
	}
	if _, err := embed.NewCache(inner, -1); err == nil {
		t.Fatal("negative size accepted")
	}
}
