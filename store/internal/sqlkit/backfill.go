package sqlkit

import (
	"context"
	"fmt"

	"github.com/h4r/h4r"
)

// VectorBatch is how many items one step of re-embedding embeds and
// writes in one transaction.
const VectorBatch = 256

// VectorWriter embeds items with e and writes their vectors under e's
// model: the store's own write, in its transaction.
type VectorWriter func(ctx context.Context, e h4r.Embedder, items []*h4r.Item) error

// MissingBatch reads, in id order, up to VectorBatch ids after after of
// items without a vector of model: the last id it read ("" when it read
// none) and the items of those ids still stored.
type MissingBatch func(ctx context.Context, model, after string) (last string, items []*h4r.Item, err error)

// EmbedItems embeds the texts of items with e (Embed) and returns their
// ids and vectors, in order.
func EmbedItems(ctx context.Context, e h4r.Embedder, items []*h4r.Item) ([]string, [][]float32, error) {
	texts, ids := make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		texts[i], ids[i] = it.Text, it.ID
	}
	vecs, err := Embed(ctx, e, texts)
	if err != nil {
		return nil, nil, fmt.Errorf("embedding items %s…%s: %w", ids[0], ids[len(ids)-1], err)
	}
	return ids, vecs, nil
}

// EmbedAll embeds every item each visits with e and writes their vectors
// with write, in batches of VectorBatch; progress, when not nil, is called
// after each batch with the items done so far. It returns how many items
// it wrote, up to the first error.
func EmbedAll(ctx context.Context, e h4r.Embedder, each func(context.Context, func(*h4r.Item) error) error, write VectorWriter, progress func(done int)) (int, error) {
	var batch []*h4r.Item
	done := 0
	flush := func() error {
		if err := write(ctx, e, batch); err != nil {
			return err
		}
		done += len(batch)
		batch = batch[:0]
		if progress != nil {
			progress(done)
		}
		return nil
	}
	err := each(ctx, func(it *h4r.Item) error {
		batch = append(batch, it)
		if len(batch) == VectorBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return done, err
}

// EmbedMissing embeds, with e, the items without a vector of e's model,
// in batches in id order (next reads each batch, write embeds and writes
// it), and returns how many it embedded. An embedder that is not ready
// (EmbedderReady) embeds nothing.
func EmbedMissing(ctx context.Context, e h4r.Embedder, next MissingBatch, write VectorWriter) (int, error) {
	if !EmbedderReady(e) {
		return 0, nil
	}
	done := 0
	after := ""
	for {
		last, batch, err := next(ctx, e.Model(), after)
		if err != nil {
			return done, fmt.Errorf("finding items without vectors of %s: %w", e.Model(), err)
		}
		if last == "" {
			return done, nil
		}
		after = last
		if err := write(ctx, e, batch); err != nil {
			return done, err
		}
		done += len(batch)
	}
}
