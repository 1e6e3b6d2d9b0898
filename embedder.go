package h4r

import "context"

// Embedder turns texts into vectors of one model: the built-in hashing
// embedder, the learned embedder and an OpenAI-compatible server (package
// embed) implement it;
// the stores embed item texts with it at ingest and reindex, the vector
// generator embeds queries, the context bridge embeds tool calls.
type Embedder interface {
	// Model names the vector space: vectors of different models never
	// mix, and stores keep the model beside each vector.
	Model() string
	// Embed returns one unit-length vector per text, in order, all of one
	// dimension. It must be safe for concurrent use and respect ctx.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// PinEmbedder returns an embedder that embeds with e's model of this
// moment and names that model, whatever e does meanwhile. An embedder
// whose model changes in place (the learned embedder, learning again)
// implements Pin; any other is its own pin. Whoever stores a vector or
// compares one takes the model's name from the pin that computed it:
// asking e for its name after embedding could name a model learned in
// between, and a vector would then claim a model it does not belong to.
func PinEmbedder(e Embedder) Embedder {
	if p, ok := e.(interface{ Pin() Embedder }); ok {
		return p.Pin()
	}
	return e
}
