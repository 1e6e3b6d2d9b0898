package app

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
)

// Learning settings without a variable of their own.
const (
	// learnedKind is the row of the learned embedder's model in the
	// store's embedder_models.
	learnedKind = "learned"
	// relearnCheckEvery is how often a server checks whether the corpus
	// drifted from what the model was learned on, and embeds the items
	// left without a vector of the current model.
	relearnCheckEvery = time.Minute
	// modelPollEvery is how often a server reads the name of the saved
	// model, to take up one learned by another replica or by h4r reindex:
	// until it does, its queries are embedded with the model it holds and
	// meet only the vectors of that model.
	modelPollEvery = 2 * time.Second
	// relearnGrowth: the model is learned again when the corpus has grown
	// to this many times the size it was learned at, since its vocabulary
	// then misses much of what is indexed.
	relearnGrowth = 2
)

// modelStore keeps what a built-in embedder learned (store/sqlite.Store,
// store/postgres.Store).
type modelStore interface {
	EmbedderModel(ctx context.Context, kind string) (name string, model []byte, err error)
	EmbedderModelName(ctx context.Context, kind string) (string, error)
	PutEmbedderModel(ctx context.Context, kind, name string, model []byte) error
}

// missingEmbedder embeds the items without a vector of the current model
// (store/sqlite.Store, store/postgres.Store).
type missingEmbedder interface {
	EmbedMissingVectors(ctx context.Context) (int, error)
}

// learningLock lets one process at a time learn the model over a store
// that several replicas share (store/postgres.Store); a store that one
// process owns needs none.
type learningLock interface {
	// LockLearning takes the lock, waiting for it when wait is set;
	// without wait, ok is false when another process holds it.
	LockLearning(ctx context.Context, wait bool) (unlock func(), ok bool, err error)
}

// learner learns the learned embedder's model from the store, saves it
// there and re-embeds the items with it. One learning runs at a time in
// the process, and, over a shared store, among the replicas.
type learner struct {
	emb    *embed.Learned
	store  Store
	models modelStore
	shared learningLock // nil: the store is this process's alone
	vs     vectorStore  // nil with Qdrant: its mirror is rebuilt by h4r reindex
	dim    int
	log    *slog.Logger

	// pollEvery and checkEvery are modelPollEvery and relearnCheckEvery
	// but in tests.
	pollEvery, checkEvery time.Duration

	mu        sync.Mutex // one learning or loading at a time
	learnedAt int        // items in the store when the current model was learned (0: none)
}

// load makes the saved model current; it reports whether there was one.
func (l *learner) load(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loadLocked(ctx)
}

// loadLocked is load; the caller holds mu.
func (l *learner) loadLocked(ctx context.Context) (bool, error) {
	_, data, err := l.models.EmbedderModel(ctx, learnedKind)
	if err != nil || data == nil {
		return false, err
	}
	m, err := embed.Decode(data)
	if err != nil {
		return false, fmt.Errorf("loading the learned embedder's model: %w", err)
	}
	l.emb.Swap(m)
	l.learnedAt = m.Docs()
	if err := l.follow(ctx, m); err != nil {
		return false, err
	}
	return true, nil
}

// takeUp loads the saved model when it is not the one held: another
// replica, or h4r reindex, learned it. A learning under way here is left
// to finish (it saves its own model; the next poll compares again). It
// reports whether it loaded one.
func (l *learner) takeUp(ctx context.Context) (bool, error) {
	if !l.mu.TryLock() {
		return false, nil
	}
	defer l.mu.Unlock()
	name, err := l.models.EmbedderModelName(ctx, learnedKind)
	if err != nil || name == "" || name == l.emb.Model() {
		return false, err
	}
	old := l.emb.Model()
	if _, err := l.loadLocked(ctx); err != nil {
		return false, err
	}
	l.log.InfoContext(ctx, "took up the learned embedder's model saved by another process", "model", l.emb.Model(), "previous", old)
	return true, nil
}

// sweep embeds the items left without a vector of the current model (a
// write that embedded with the previous model while a learning replaced
// it, here or on another replica), once the model held is the saved one:
// a replica that has not taken up the saved model yet would re-embed with
// the old one.
func (l *learner) sweep(ctx context.Context) (int, error) {
	me, ok := l.vs.(missingEmbedder)
	if !ok {
		return 0, nil
	}
	if !l.mu.TryLock() {
		return 0, nil // a learning here re-embeds the items itself
	}
	defer l.mu.Unlock()
	name, err := l.models.EmbedderModelName(ctx, learnedKind)
	if err != nil || name == "" || name != l.emb.Model() {
		return 0, err
	}
	n, err := me.EmbedMissingVectors(ctx)
	if err != nil {
		return n, fmt.Errorf("embedding items without a vector of %s: %w", name, err)
	}
	if n > 0 {
		l.log.InfoContext(ctx, "embedded items left without a vector of the learned model", "model", name, "items", n)
	}
	return n, nil
}

// follow points the vector store's in-memory index at m's vectors (the
// Postgres store holds one model's, named when vectors were enabled).
func (l *learner) follow(ctx context.Context, m *embed.LearnedModel) error {
	f, ok := l.vs.(interface {
		UseVectorModel(context.Context, string) error
	})
	if !ok {
		return nil
	}
	if err := f.UseVectorModel(ctx, m.Name()); err != nil {
		return fmt.Errorf("switching the vector index to the learned model: %w", err)
	}
	return nil
}

// relearn learns a model from the store's items, saves it, makes it
// current and re-embeds every item with it. It returns the items
// re-embedded; with too few items it learns nothing and returns
// embed.ErrNotLearned.
func (l *learner) relearn(ctx context.Context, progress func(done int)) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	total, err := l.store.Count(ctx)
	if err != nil {
		return 0, fmt.Errorf("learning the embedder: %w", err)
	}
	start := time.Now()
	corpus := func(ctx context.Context, fn func(string) error) error {
		return l.store.Each(ctx, func(it *h4r.Item) error { return fn(it.Text) })
	}
	m, err := embed.Learn(ctx, corpus, total, embed.WithLearnedDim(l.dim))
	if err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		return 0, err
	}
	if err := l.models.PutEmbedderModel(ctx, learnedKind, m.Name(), buf.Bytes()); err != nil {
		return 0, err
	}
	l.emb.Swap(m)
	l.learnedAt = total
	if err := l.follow(ctx, m); err != nil {
		return 0, err
	}
	l.log.InfoContext(ctx, "learned the embedder from the corpus", "model", m.Name(), "items", total,
		"vocabulary", m.Vocabulary(), "took", time.Since(start).Round(time.Millisecond))
	if l.vs == nil {
		return 0, nil
	}
	n, err := l.vs.ReindexVectors(ctx, progress)
	if err != nil {
		return n, fmt.Errorf("re-embedding the items with the learned model: %w", err)
	}
	return n, nil
}

// lockShared takes the learning lock among the replicas, if the store has
// one (see learningLock).
func (l *learner) lockShared(ctx context.Context, wait bool) (unlock func(), ok bool, err error) {
	if l.shared == nil {
		return func() {}, true, nil
	}
	return l.shared.LockLearning(ctx, wait)
}

// check is the periodic drift check: when the corpus outgrew the model it
// learns again, unless another replica is learning (the poll takes up its
// model) or has just learned one that fits. It reports whether it learned.
func (l *learner) check(ctx context.Context) (bool, error) {
	if drifted, err := l.drifted(ctx); err != nil || !drifted {
		return false, err
	}
	unlock, ok, err := l.lockShared(ctx, false)
	if err != nil || !ok {
		return false, err
	}
	defer unlock()
	// Another replica may have saved a model since the last poll.
	if _, err := l.takeUp(ctx); err != nil {
		return false, err
	}
	if drifted, err := l.drifted(ctx); err != nil || !drifted {
		return false, err
	}
	if _, err := l.relearn(ctx, nil); err != nil {
		return false, err
	}
	return true, nil
}

// learnFirst is the first start over a corpus without a model: it waits
// for a replica that is learning one and takes up its model, or learns
// one itself.
func (l *learner) learnFirst(ctx context.Context) error {
	unlock, _, err := l.lockShared(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	if loaded, err := l.load(ctx); err != nil || loaded {
		return err
	}
	if drifted, err := l.drifted(ctx); err != nil || !drifted {
		return err
	}
	if _, err := l.relearn(ctx, nil); err != nil && !errors.Is(err, embed.ErrNotLearned) {
		return err
	}
	return nil
}

// drifted reports whether the corpus outgrew the model: none learned yet
// over enough items, or the corpus grown relearnGrowth-fold since.
func (l *learner) drifted(ctx context.Context) (bool, error) {
	total, err := l.store.Count(ctx)
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	at := l.learnedAt
	l.mu.Unlock()
	if at == 0 {
		return total >= embed.DefaultLearnMinDocs, nil
	}
	return total >= relearnGrowth*at, nil
}

// prepareLearned loads the learned embedder's saved model, or, over a
// corpus that has none yet (a first start), learns one and embeds the
// items with it before the service answers.
func prepareLearned(ctx context.Context, cfg config.Config, a *App, emb *embed.Learned, vs vectorStore, o options) error {
	log := o.log
	models, ok := a.base.(modelStore)
	if !ok {
		return errors.New("H4R_EMBEDDER=learned: this store cannot keep the learned model")
	}
	l := &learner{emb: emb, store: a.base, models: models, vs: vs, dim: cfg.EmbedLearnedDim, log: log,
		pollEvery: cmp.Or(o.modelPoll, modelPollEvery), checkEvery: cmp.Or(o.relearnCheck, relearnCheckEvery)}
	l.shared, _ = a.base.(learningLock)
	a.learner = l
	loaded, err := l.load(ctx)
	if err != nil {
		return err
	}
	if vs == nil {
		// The Qdrant collection is rebuilt by h4r reindex, which learns
		// first: learning here would leave its points of another model.
		if !loaded {
			log.WarnContext(ctx, "the learned embedder has no model yet: with QDRANT_URL it learns on h4r reindex; until then there are no vector candidates")
		}
		return nil
	}
	if !loaded {
		if err := l.learnFirst(ctx); err != nil {
			return err
		}
	}
	watchDrift(a, l, log)
	return nil
}

// watchDrift takes up a model saved by another process, learns the model
// again in the background when the corpus outgrows it, and embeds the
// items left without a vector of the current one; Close waits for it to
// stop.
func watchDrift(a *App, l *learner, log *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		poll := time.NewTicker(l.pollEvery)
		defer poll.Stop()
		check := time.NewTicker(l.checkEvery)
		defer check.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
				if _, err := l.takeUp(ctx); err != nil && ctx.Err() == nil {
					log.WarnContext(ctx, "taking up the learned model saved by another process failed; the current model stays", "error", err)
				}
				continue
			case <-check.C:
			}
			if _, err := l.check(ctx); err != nil && ctx.Err() == nil && !errors.Is(err, embed.ErrNotLearned) {
				log.WarnContext(ctx, "learning the embedder again failed; the current model stays", "error", err)
			}
			if _, err := l.sweep(ctx); err != nil && ctx.Err() == nil {
				log.WarnContext(ctx, "embedding items without a vector of the learned model failed; the next check retries", "error", err)
			}
		}
	}()
	a.closers = append(a.closers, func() error {
		cancel()
		<-done
		return nil
	})
}

// A LearnOption sets how LearnEmbedder reports its work.
type LearnOption func(*learnOptions)

type learnOptions struct {
	progress func(done int)
}

// WithLearnProgress has LearnEmbedder call progress with the number of
// items re-embedded so far, once the model is learned: re-embedding is
// most of the time it takes at a million items.
func WithLearnProgress(progress func(done int)) LearnOption {
	return func(o *learnOptions) { o.progress = progress }
}

// Learns reports whether the embedder learns its model from the store
// (H4R_EMBEDDER=learned), so that LearnEmbedder has work to do.
func (a *App) Learns() bool { return a.learner != nil }

// LearnEmbedder learns the learned embedder's model from the store now and
// re-embeds every item with it, as h4r reindex does: after a bulk load, so
// that the model reflects it without waiting for the drift check. It
// returns the items embedded, and does nothing (0, nil) when another
// embedder is configured.
func (a *App) LearnEmbedder(ctx context.Context, opts ...LearnOption) (int, error) {
	if a.learner == nil {
		return 0, nil
	}
	var o learnOptions
	for _, opt := range opts {
		opt(&o)
	}
	unlock, _, err := a.learner.lockShared(ctx, true)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return a.learner.relearn(ctx, o.progress)
}
