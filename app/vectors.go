package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/conversation"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/rank"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/store/qdrant"
	"github.com/h4r/h4r/store/sqlite"
)

// Vector settings without a variable of their own.
const (
	// docEmbedTimeout bounds one embedding call at ingest and reindex, where
	// a remote model embeds batches of documents: H4R_EMBED_TIMEOUT is a
	// query's budget, far too short for that.
	docEmbedTimeout = 30 * time.Second
	// mirrorCloseTimeout bounds the Qdrant mirror's last retry at shutdown.
	mirrorCloseTimeout = 10 * time.Second
)

// vectorStore is a store that keeps vectors itself and searches them in
// process (store/sqlite.Store, store/postgres.Store).
type vectorStore interface {
	SearchVectors(ctx context.Context, model string, vector []float32, filters h4r.Filters, limit int, minScore float64) ([]h4r.Hit, error)
	MissingVectors(ctx context.Context, model string) (int, error)
	WarmVectors(ctx context.Context, model string) error
	ReindexVectors(ctx context.Context, progress func(done int)) (int, error)
}

// textGenerators returns the relevance generators and how their scores
// fuse into relevance: full-text always; vectors from the store's
// in-process index (embedded or Postgres), or from Qdrant when QDRANT_URL
// is set (the store wrapped so that writes are mirrored). A store that keeps no vectors, without Qdrant,
// gets full-text only and a warning at start; semantic requests then say
// so in their pack.
func textGenerators(ctx context.Context, cfg config.Config, a *App, o options) ([]h4r.Generator, rank.Fusion, error) {
	fusion := rank.Fusion{Method: cfg.Fusion, Weights: map[string]float64{
		h4r.GenFullText:         1 - cfg.FusionVector,
		h4r.GenVector:           cfg.FusionVector,
		conversation.GenSession: cfg.FusionSession,
		conversation.GenTime:    cfg.FusionTime,
	}, Unscaled: map[string]bool{conversation.GenSession: true, conversation.GenTime: true}}
	fulltext := a.base.FullText()
	if cfg.Embedder == "none" {
		o.log.InfoContext(ctx, "vectors are off (H4R_EMBEDDER=none): nothing is embedded; hybrid and semantic queries are answered by full-text search")
		return []h4r.Generator{fulltext}, fusion, nil
	}
	docs, queries, err := embedders(cfg, o.log)
	if err != nil {
		return nil, fusion, err
	}
	learned, _ := docs.(*embed.Learned)
	if o.observeEmbedding != nil {
		docs = timedEmbedder{docs, o.observeEmbedding}
	}
	var index embed.Index
	switch vs, isVectorStore := enableVectors(a.base, docs); {
	case cfg.QdrantURL != "":
		if learned != nil {
			if err := prepareLearned(ctx, cfg, a, learned, nil, o); err != nil {
				return nil, fusion, err
			}
		}
		ix, mirror, err := openQdrant(ctx, cfg, docs, a.base, o.log)
		if err != nil {
			return nil, fusion, err
		}
		a.closers = append(a.closers, ix.Close, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), mirrorCloseTimeout)
			defer cancel()
			return mirror.Close(ctx)
		})
		a.mirrors = append(a.mirrors, storeMirror{name: "qdrant", sync: mirror.Sync})
		a.Checks["qdrant"] = ix.Ping
		a.vectorCount = ix.PointCount
		index = ix
	case isVectorStore:
		if learned != nil {
			if err := prepareLearned(ctx, cfg, a, learned, vs, o); err != nil {
				return nil, fusion, err
			}
		}
		if r, ok := vs.(interface{ VectorsReady(context.Context) error }); ok {
			a.Checks["vectors"] = r.VectorsReady // Postgres: ready once this replica loaded them
		}
		if n, err := vs.MissingVectors(ctx, docs.Model()); err != nil {
			return nil, fusion, err
		} else if n > 0 {
			o.log.WarnContext(ctx, "items without vectors of the configured embedder: vector search misses them until h4r reindex",
				"items", n, "model", docs.Model())
		}
		warmVectors(a, vs, docs.Model(), o.log)
		a.vectorCount = storeVectorCount(a.base, vs, docs.Model)
		index = vs
	default:
		o.log.WarnContext(ctx, "vector candidates are unavailable: this store keeps no vectors; set QDRANT_URL for semantic and hybrid vector search (semantic queries are answered by full-text search)")
		return []h4r.Generator{fulltext}, fusion, nil
	}
	gen, err := embed.NewGenerator(queries, index, embed.WithQueryTimeout(cfg.EmbedTimeout),
		embed.WithMaxHits(cfg.VectorCandidates), embed.WithFallback(fulltext))
	if err != nil {
		return nil, fusion, fmt.Errorf("building the vector generator: %w", err)
	}
	return []h4r.Generator{fulltext, gen}, fusion, nil
}

// storeVectorCount counts the vectors of the current model a store keeps: its items
// less those without one.
func storeVectorCount(store Store, vs vectorStore, model func() string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		total, err := store.Count(ctx)
		if err != nil {
			return 0, fmt.Errorf("counting items: %w", err)
		}
		missing, err := vs.MissingVectors(ctx, model()) // the learned embedder's model changes when it learns
		if err != nil {
			return 0, err
		}
		return max(total-missing, 0), nil
	}
}

// VectorCount returns how many item vectors the vector index holds (the
// store's own, or Qdrant's points); 0 when there is no vector index.
func (a *App) VectorCount(ctx context.Context) (int, error) {
	if a.vectorCount == nil {
		return 0, nil
	}
	return a.vectorCount(ctx)
}

// enableVectors makes store embed what it writes with docs and returns it
// as a vectorStore, when it is one that keeps vectors itself. The stores
// name their Embedder each in its own package, hence the switch.
func enableVectors(store Store, docs embed.Embedder) (vectorStore, bool) {
	switch s := store.(type) {
	case *sqlite.Store:
		s.EnableVectors(docs)
		return s, true
	case *postgres.Store:
		s.EnableVectors(docs)
		return s, true
	}
	return nil, false
}

// warmVectors loads the store's vectors into memory in the background, so
// that the first requests do not wait for it; Close waits for it to stop.
// Requests that arrive before it is done wait (under their generator
// deadline) rather than load a second copy.
func warmVectors(a *App, vs vectorStore, model string, log *slog.Logger) {
	var ready func(context.Context) error
	if r, ok := vs.(interface{ VectorsReady(context.Context) error }); ok {
		ready = r.VectorsReady // Postgres: WarmVectors follows other replicas until Close
	}
	a.warmUntil("vector index", func(ctx context.Context) error { return vs.WarmVectors(ctx, model) },
		ready, log, "loading the vector index failed; the first vector search will retry")
}

// embedders returns the embedder of documents (ingest, reindex) and that
// of queries (with the LRU cache and the query deadline).
func embedders(cfg config.Config, log *slog.Logger) (docs, queries embed.Embedder, err error) {
	switch cfg.Embedder {
	case "openai":
		common := []embed.OpenAIOption{embed.WithAPIKey(cfg.EmbedAPIKey), embed.WithOpenAILogger(log)}
		d, err := embed.NewOpenAI(cfg.EmbedURL, cfg.EmbedModel, append(common, embed.WithTimeout(max(cfg.EmbedTimeout, docEmbedTimeout)))...)
		if err != nil {
			return nil, nil, fmt.Errorf("H4R_EMBED_URL, H4R_EMBED_MODEL: %w", err)
		}
		q, err := embed.NewOpenAI(cfg.EmbedURL, cfg.EmbedModel, append(common, embed.WithTimeout(cfg.EmbedTimeout))...)
		if err != nil {
			return nil, nil, fmt.Errorf("H4R_EMBED_TIMEOUT: %w", err)
		}
		docs, queries = d, q
	case "learned":
		// One embedder for documents and queries: the model it holds is
		// replaced in place when the corpus is learned again.
		l := embed.NewLearned(nil, cfg.EmbedLearnedDim)
		docs, queries = l, l
	default: // "hash", the only other value config accepts ("none" keeps no embedder)
		h, err := embed.NewHash(embed.WithHashDim(cfg.EmbedDim))
		if err != nil {
			return nil, nil, fmt.Errorf("H4R_EMBED_DIM: %w", err)
		}
		docs, queries = h, h
	}
	if queries, err = embed.NewCache(queries, cfg.EmbedCacheSize); err != nil {
		return nil, nil, fmt.Errorf("H4R_EMBED_CACHE_SIZE: %w", err)
	}
	return docs, queries, nil
}

// openQdrant connects to Qdrant, bootstraps the collection at the
// embedder's dimension and starts the mirror of store's writes.
func openQdrant(ctx context.Context, cfg config.Config, docs embed.Embedder, store Store, log *slog.Logger) (*qdrant.Index, *qdrant.Mirror, error) {
	dim, err := embed.Dimension(ctx, docs)
	if err != nil {
		return nil, nil, fmt.Errorf("QDRANT_URL: the collection needs the embedder's dimension: %w", err)
	}
	ix, err := qdrant.Open(ctx, cfg.QdrantURL, qdrant.WithAPIKey(cfg.QdrantAPIKey), qdrant.WithCollection(cfg.QdrantCollection),
		qdrant.WithDimension(dim), qdrant.WithItems(store), qdrant.WithLogger(log))
	if err != nil {
		return nil, nil, fmt.Errorf("QDRANT_URL: %w", err)
	}
	mirror, err := qdrant.NewMirror(ix, docs, store, qdrant.WithMirrorLogger(log))
	if err != nil {
		return nil, nil, errors.Join(err, ix.Close())
	}
	return ix, mirror, nil
}

// RebuildVectors rebuilds the vector index from the store (h4r reindex):
// the embedded store's vectors, or the Qdrant collection when QDRANT_URL is
// set. progress, when not nil, is called with the items done so far. It
// returns the number of items embedded.
func RebuildVectors(ctx context.Context, a *App, progress func(done int)) (int, error) {
	if a.Config.Embedder == "none" {
		return 0, errors.New("vectors are off (H4R_EMBEDDER=none): there is no vector index to rebuild")
	}
	if a.learner != nil && a.Config.QdrantURL == "" {
		// Learning again re-embeds every item with the new model.
		n, err := a.learner.relearn(ctx, progress)
		if errors.Is(err, embed.ErrNotLearned) {
			return 0, fmt.Errorf("%w: at least %d items are needed", err, embed.DefaultLearnMinDocs)
		}
		return n, err
	}
	if a.learner != nil {
		if _, err := a.learner.relearn(ctx, nil); err != nil {
			return 0, err
		}
	}
	docs, _, err := embedders(a.Config, slog.New(slog.DiscardHandler))
	if err != nil {
		return 0, err
	}
	if a.learner != nil {
		docs = a.learner.emb
	}
	if a.Config.QdrantURL != "" {
		// A mirror of its own: the service's is busy with live writes.
		ix, mirror, err := openQdrant(ctx, a.Config, docs, a.Store, slog.New(slog.DiscardHandler))
		if err != nil {
			return 0, err
		}
		defer ix.Close()
		defer mirror.Close(ctx)
		return mirror.Rebuild(ctx, a.Store.Each, progress)
	}
	if vs, ok := enableVectors(a.base, docs); ok {
		return vs.ReindexVectors(ctx, progress)
	}
	return 0, errors.New("this store keeps no vectors: set QDRANT_URL to keep them in Qdrant, then run h4r reindex")
}

// timedEmbedder reports how long each embedding took.
type timedEmbedder struct {
	embed.Embedder
	observe func(time.Duration)
}

// Ready passes the embedder's readiness on (see embed.Learned.Ready).
func (e timedEmbedder) Ready() bool {
	r, ok := e.Embedder.(interface{ Ready() bool })
	return !ok || r.Ready()
}

// Pin pins the embedder (see h4r.PinEmbedder), still timed.
func (e timedEmbedder) Pin() h4r.Embedder {
	return timedEmbedder{h4r.PinEmbedder(e.Embedder), e.observe}
}

func (e timedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	start := time.Now()
	v, err := e.Embedder.Embed(ctx, texts)
	e.observe(time.Since(start))
	return v, err
}
