package sqlkit

import (
	"context"
	"fmt"

	"github.com/h4r/h4r"
)

// Embed embeds texts with e and checks the answer: one vector per text,
// all of one dimension. Both stores embed through it, on writes and on
// re-embedding.
func Embed(ctx context.Context, e h4r.Embedder, texts []string) ([][]float32, error) {
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("the embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	for i, v := range vecs {
		if len(v) == 0 || len(v) != len(vecs[0]) {
			return nil, fmt.Errorf("vector %d has %d dimensions, vector 0 has %d", i, len(v), len(vecs[0]))
		}
	}
	return vecs, nil
}

// EmbedderReady reports whether e can embed yet: an embedder learned from
// the corpus has nothing to embed with before it learned, and items
// written meanwhile get their vectors when it does (it re-embeds them all),
// so a write skips them quietly rather than warn on every write.
func EmbedderReady(e h4r.Embedder) bool {
	r, ok := e.(interface{ Ready() bool })
	return !ok || r.Ready()
}
