package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// Vectors without Qdrant: every item's vector is kept in item_vectors
// (migration 0006), compact (int8 codes) and exact (float32). Each replica
// holds the compact codes of one model in memory (vecindex), scans them
// for every search and rescores the best candidates with the float32
// vectors read by id. A replica loads the codes in the background at start
// (WarmVectors; VectorsReady says when it is done) and then follows the
// writes of every replica by polling item_vectors and vector_tombstones
// for vseq past the last one it applied.

// Vector defaults.
const (
	defaultVectorLimit = 100
	// defaultVectorPoll is how often a replica reads the vector writes of
	// the others: a write through one replica is searchable on every other
	// within about this (TestVectorsAcrossReplicas).
	defaultVectorPoll = 500 * time.Millisecond
	vectorLoadRetry   = 2 * time.Second
)

// WithVectorPollInterval sets how often the store reads other replicas'
// vector writes (default 500 ms).
func WithVectorPollInterval(d time.Duration) Option {
	return func(o *options) { o.vectorPoll = d }
}

// vectorState is the replica's in-memory vector index.
type vectorState struct {
	mu       sync.RWMutex
	embedder h4r.Embedder
	model    string
	ix       *ann.Index // Open sets it
	mark     int64      // the last vseq applied
	ready    chan struct{}
	loaded   bool

	catchMu sync.Mutex // one catch-up at a time, so changes apply in vseq order
}

// EnableVectors makes the store embed every item it writes with e, keep the
// vectors in item_vectors and serve SearchVectors. Call it before the store
// is used, then WarmVectors.
func (s *Store) EnableVectors(e h4r.Embedder) {
	v := &s.vectors
	v.mu.Lock()
	defer v.mu.Unlock()
	v.embedder = e
	v.model = e.Model()
}

func (s *Store) vectorEmbedder() h4r.Embedder {
	s.vectors.mu.RLock()
	defer s.vectors.mu.RUnlock()
	return s.vectors.embedder
}

// embedTexts returns the vectors of texts and the embedder of the one
// model that computed them (pinned: the name the vectors are stored under),
// or nil vectors when the store has no embedder or embedding failed: the
// items are then written without vectors (vector search misses them until
// h4r reindex), as on the embedded store.
func (s *Store) embedTexts(ctx context.Context, texts []string) (h4r.Embedder, [][]float32) {
	e := s.vectorEmbedder()
	if e != nil {
		e = h4r.PinEmbedder(e)
	}
	if e == nil || len(texts) == 0 || !sqlkit.EmbedderReady(e) {
		return e, nil
	}
	vecs, err := sqlkit.Embed(ctx, e, texts)
	if err != nil {
		s.log.WarnContext(ctx, "items written without vectors: vector search will miss them until h4r reindex",
			"model", e.Model(), "items", len(texts), "error", err)
		return e, nil
	}
	return e, vecs
}

// writeVectors writes the vectors of ids in tx, which holds the vector
// lock (lockStats), or deletes theirs when vecs is nil (a vector of an item's
// old text would be wrong). Ids that do not exist are skipped.
func writeVectors(ctx context.Context, tx pgx.Tx, model string, ids []string, vecs [][]float32) error {
	if vecs == nil {
		if _, err := tx.Exec(ctx, `DELETE FROM item_vectors WHERE item_id = ANY($1)`, ids); err != nil {
			return fmt.Errorf("deleting stale vectors: %w", err)
		}
		return nil
	}
	scales := make([]float32, len(ids))
	codes := make([][]byte, len(ids))
	exact := make([][]byte, len(ids))
	for i, vec := range vecs {
		c, sc := vecindex.Quantize(vec)
		scales[i], codes[i], exact[i] = sc, encodeCodes(c), vecindex.EncodeFloat32(vec)
	}
	_, err := tx.Exec(ctx, `INSERT INTO item_vectors (item_id, model, scale, code, vector)
		SELECT u.id, $2, u.scale, u.code, u.vector
		FROM unnest($1::text[], $3::real[], $4::bytea[], $5::bytea[]) AS u (id, scale, code, vector)
		WHERE EXISTS (SELECT 1 FROM items i WHERE i.id = u.id)
		ORDER BY u.id
		ON CONFLICT (item_id) DO UPDATE SET model = excluded.model, scale = excluded.scale,
			code = excluded.code, vector = excluded.vector`, ids, model, scales, codes, exact)
	if err != nil {
		return fmt.Errorf("writing %d vectors: %w", len(ids), err)
	}
	return nil
}

func encodeCodes(c []int8) []byte {
	b := make([]byte, len(c))
	for i, x := range c {
		b[i] = byte(x)
	}
	return b
}

// codesOf reinterprets bytes as int8 codes, in place.
func codesOf(b []byte) []int8 {
	c := make([]int8, len(b))
	for i, x := range b {
		c[i] = int8(x)
	}
	return c
}

// WarmVectors loads the compact vectors of model into memory, then follows
// the writes of every replica (polling) until ctx ends; it returns nil
// then. A failed load is retried. Call it in the background at start;
// VectorsReady reports when the load is done.
func (s *Store) WarmVectors(ctx context.Context, model string) error {
	v := &s.vectors
	v.mu.Lock()
	if v.model == "" {
		v.model = model
	}
	v.mu.Unlock()
	if !s.loadUntilDone(ctx, "the vector index", vectorLoadRetry, s.loadVectors) {
		return nil
	}
	t := time.NewTicker(s.vectorPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := s.catchUpVectors(ctx); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "reading other replicas' vector writes failed; retrying at the next poll", "error", err)
			}
		}
	}
}

// UseVectorModel makes model the one whose vectors this replica keeps in
// memory and searches, and loads them: an embedder whose model changes in
// place (the learned embedder, learning again here or on another replica)
// calls it before re-embedding the items, which then reach memory as they
// are written. Until the load is done, searches keep the previous model's
// index, and a search with the new model gets no hits rather than a
// comparison of vectors of two models.
func (s *Store) UseVectorModel(ctx context.Context, model string) error {
	v := &s.vectors
	v.catchMu.Lock() // a load in flight ends before the model changes
	defer v.catchMu.Unlock()
	v.mu.Lock()
	same, loaded := v.model == model, v.loaded
	if !loaded {
		v.model = model // WarmVectors loads this model's
	}
	v.mu.Unlock()
	if same || !loaded {
		return nil
	}
	return s.loadVectorsLocked(ctx, model)
}

// VectorsReady returns nil once the vector index is loaded, and an
// unavailable error before (readiness: /health/ready).
func (s *Store) VectorsReady(context.Context) error {
	s.vectors.mu.RLock()
	defer s.vectors.mu.RUnlock()
	if !s.vectors.loaded {
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "the vector index is still loading")
	}
	return nil
}

// loadVectors reads every compact vector of the model, and the vseq they
// are current at, in one snapshot.
func (s *Store) loadVectors(ctx context.Context) error {
	v := &s.vectors
	v.catchMu.Lock()
	defer v.catchMu.Unlock()
	v.mu.RLock()
	model := v.model
	v.mu.RUnlock()
	return s.loadVectorsLocked(ctx, model)
}

// loadVectorsLocked loads model's vectors and makes them, and model, the
// replica's at once; the caller holds catchMu.
func (s *Store) loadVectorsLocked(ctx context.Context, model string) error {
	v := &s.vectors
	// Filled exact (threshold 0) off the lock, then clustered in the
	// background once published (Guard): the load never stops to cluster.
	ix := ann.New(ann.WithThreshold(0))
	var mark int64
	err := s.read(ctx, func(ctx context.Context) error {
		ix.Reset()
		tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if err := tx.QueryRow(ctx, `SELECT greatest((SELECT max(vseq) FROM item_vectors), (SELECT max(vseq) FROM vector_tombstones), 0)`).Scan(&mark); err != nil {
			return fmt.Errorf("reading the vector watermark: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT item_id, scale, code FROM item_vectors WHERE model = $1`, model)
		if err != nil {
			return err
		}
		var id string
		var scale float32
		var code []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &scale, &code}, func() error {
			if d := ix.Dim(); d != 0 && len(code) != d {
				return fmt.Errorf("vector of item %q has %d dimensions, others of model %s have %d: run h4r reindex", id, len(code), model, d)
			}
			ix.PutCodes(id, codesOf(code), scale)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("loading vectors: %w", err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ix != nil {
		v.ix.Abandon()
	}
	v.ix, v.mark, v.loaded, v.model = ix, mark, true, model
	ix.Guard(&v.mu, s.annAbove)
	if v.ready != nil {
		select {
		case <-v.ready:
		default:
			close(v.ready)
		}
	}
	return nil
}

// catchUpVectors applies the vector writes committed since the last one
// applied, by any replica, in vseq order.
func (s *Store) catchUpVectors(ctx context.Context) error {
	v := &s.vectors
	v.catchMu.Lock()
	defer v.catchMu.Unlock()
	v.mu.RLock()
	mark, model, loaded := v.mark, v.model, v.loaded
	v.mu.RUnlock()
	if !loaded {
		return nil
	}
	type change struct {
		id     string
		model  string
		scale  float32
		code   []byte
		vseq   int64
		remove bool
	}
	var changes []change
	err := s.read(ctx, func(ctx context.Context) error {
		changes = changes[:0]
		rows, err := s.pool.Query(ctx, `SELECT item_id, model, scale, code, vseq, false FROM item_vectors WHERE vseq > $1
			UNION ALL
			SELECT item_id, '', 0, NULL, vseq, true FROM vector_tombstones WHERE vseq > $1
			ORDER BY 5`, mark)
		if err != nil {
			return err
		}
		var c change
		_, err = pgx.ForEachRow(rows, []any{&c.id, &c.model, &c.scale, &c.code, &c.vseq, &c.remove}, func() error {
			changes = append(changes, c)
			return nil
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("reading vector writes after %d: %w", mark, err)
	}
	if len(changes) == 0 {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, c := range changes {
		if c.remove || c.model != model || (v.ix.Dim() != 0 && len(c.code) != v.ix.Dim()) {
			v.ix.Remove(c.id)
		} else {
			v.ix.PutCodes(c.id, codesOf(c.code), c.scale)
		}
		v.mark = c.vseq
	}
	return nil
}

// afterVectorWrite brings this replica's index up to date after its own
// write, so that what it wrote is searchable at once; a failure is logged
// and the next poll catches up.
func (s *Store) afterVectorWrite(ctx context.Context) {
	if s.vectorEmbedder() == nil {
		return
	}
	if err := s.catchUpVectors(context.WithoutCancel(ctx)); err != nil {
		s.log.WarnContext(ctx, "applying a vector write in memory failed; the next poll retries", "error", err)
	}
}

// waitVectors waits for the first load (bounded by ctx).
func (s *Store) waitVectors(ctx context.Context) error {
	v := &s.vectors
	v.mu.RLock()
	loaded := v.loaded
	v.mu.RUnlock()
	if loaded { // the common case, under the shared lock: an exclusive one here queued every search behind every scan in flight
		return nil
	}
	v.mu.Lock()
	if v.loaded {
		v.mu.Unlock()
		return nil
	}
	if v.ready == nil {
		v.ready = make(chan struct{})
	}
	ready := v.ready
	v.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return h4r.Errorf(h4r.EUNAVAILABLE, "", "the vector index is still loading: %v", ctx.Err())
	}
}

// SearchVectors returns the items whose vectors of model are most similar
// (cosine) to vector, best first, with the cosine as Score, among those
// that pass filters: a scan of the compact vectors in memory, then the
// best vecindex.Candidates(limit) rescored with their float32 vectors
// (above WithVectorANNThreshold, only the lists nearest the query are
// scanned).
// Hits under minScore are left out; limit 0 means 100. It waits for the
// first load (WarmVectors) within ctx.
func (s *Store) SearchVectors(ctx context.Context, model string, vector []float32, filters h4r.Filters, limit int, minScore float64) ([]h4r.Hit, error) {
	limit, err := h4r.HitLimit(limit, defaultVectorLimit)
	if err != nil {
		return nil, err
	}
	if len(vector) == 0 {
		return nil, h4r.Errorf(h4r.EINVALID, "vector", "query vector is empty")
	}
	if math.IsNaN(minScore) {
		return nil, h4r.Errorf(h4r.EINVALID, "minScore", "minimum score must be a number")
	}
	p := &params{}
	where, err := whereFilters(filters, p)
	if err != nil {
		return nil, err
	}
	if err := s.waitVectors(ctx); err != nil {
		return nil, err
	}
	v := &s.vectors
	v.mu.RLock()
	if model != v.model {
		v.mu.RUnlock()
		return nil, nil // this replica holds the vectors of another model
	}
	ix, d := v.ix, v.ix.Dim()
	v.mu.RUnlock()
	if d != 0 && d != len(vector) {
		return nil, h4r.Errorf(h4r.EINVALID, "vector", "query vector has %d dimensions, the stored vectors of %s have %d", len(vector), model, d)
	}
	rank := ann.NewRanker(v.mu.RLocker(), ix, vector, minScore)
	defer rank.Release()
	want := vecindex.Candidates(limit)
	var cands []vecindex.Scored
	if where == "" {
		cands, _ = rank.Top(want)
	} else {
		cands, err = ann.TopPassing(ctx, rank.Top, want, func(ctx context.Context, ids []string) (map[string]bool, error) {
			return s.passingIDs(ctx, ids, where, p.args)
		})
		if err != nil {
			return nil, fmt.Errorf("vector search: %w", err)
		}
	}
	hits, err := s.rescoreAndRead(ctx, model, vector, cands, limit, minScore)
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return hits, nil
}

// passingIDs returns which of ids belong to items that pass where.
func (s *Store) passingIDs(ctx context.Context, check []string, where string, args []any) (map[string]bool, error) {
	pass := map[string]bool{}
	err := s.read(ctx, func(ctx context.Context) error {
		clear(pass)
		rows, err := s.pool.Query(ctx, `SELECT i.id FROM items i WHERE i.id = ANY($`+fmt.Sprint(len(args)+1)+`)`+where, append(slices.Clone(args), check)...)
		if err != nil {
			return err
		}
		var id string
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error { pass[id] = true; return nil })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("applying filters: %w", err)
	}
	return pass, nil
}

// rescoreAndRead reads the float32 vectors and the items of the candidates
// and returns the best limit by exact score, at least minScore. A
// candidate deleted meanwhile is left out.
func (s *Store) rescoreAndRead(ctx context.Context, model string, q []float32, cands []vecindex.Scored, limit int, minScore float64) ([]h4r.Hit, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.ID
	}
	exact := map[string][]float32{}
	err := s.read(ctx, func(ctx context.Context) error {
		clear(exact)
		rows, err := s.pool.Query(ctx, `SELECT item_id, vector FROM item_vectors WHERE item_id = ANY($1) AND model = $2`, ids, model)
		if err != nil {
			return err
		}
		var id string
		var blob []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &blob}, func() error {
			vec, err := vecindex.DecodeFloat32(nil, blob)
			if err != nil {
				return fmt.Errorf("vector of item %q: %w", id, err)
			}
			exact[id] = vec
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading vectors to rescore: %w", err)
	}
	return sqlkit.Hydrate(ctx, vecindex.Rescore(q, cands, exact, limit, minScore), s.readByID)
}

// MissingVectors counts the items that have no vector of model.
func (s *Store) MissingVectors(ctx context.Context, model string) (int, error) {
	var n int
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT count(*) FROM items i
			WHERE NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = i.id AND v.model = $1)`, model).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("counting items without vectors: %w", err)
	}
	return n, nil
}

// ReindexVectors embeds every item again with the store's embedder, in
// batches, deletes the vectors of other models, then embeds the items left
// without a vector of its model (EmbedMissingVectors: a write that
// embedded with a model learned meanwhile). progress, when not nil, is
// called after each batch with the items done so far.
func (s *Store) ReindexVectors(ctx context.Context, progress func(done int)) (int, error) {
	e := s.vectorEmbedder()
	if e == nil {
		return 0, errors.New("reindexing vectors: the store has no embedder (EnableVectors)")
	}
	e = h4r.PinEmbedder(e) // every batch of one model, the one the vectors are stored under
	done, err := sqlkit.EmbedAll(ctx, e, s.Each, s.embedAndWrite, progress)
	if err == nil {
		err = s.writeTxWithin(ctx, 0, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, vectorLockSQL); err != nil {
				return fmt.Errorf("taking the vector lock: %w", err)
			}
			_, err := tx.Exec(ctx, `DELETE FROM item_vectors WHERE model <> $1`, e.Model())
			return err
		})
	}
	if err != nil {
		return done, fmt.Errorf("reindexing vectors: %w", err)
	}
	n, err := s.embedMissing(ctx, e)
	if err != nil {
		return done, fmt.Errorf("reindexing vectors: %w", err)
	}
	s.afterVectorWrite(ctx)
	return done + n, nil
}

// EmbedMissingVectors embeds the items that have no vector of the model
// the store's embedder holds now, and returns how many it embedded. An
// item gets there when its write embedded with a model that another
// learning (here or on another replica) replaced before the write
// committed, or while embedding failed; its vector, stored under the
// model that computed it, is never compared with the current model's. An
// embedder that is not ready embeds nothing.
func (s *Store) EmbedMissingVectors(ctx context.Context) (int, error) {
	e := s.vectorEmbedder()
	if e == nil {
		return 0, errors.New("embedding missing vectors: the store has no embedder (EnableVectors)")
	}
	n, err := s.embedMissing(ctx, h4r.PinEmbedder(e))
	if err != nil {
		return n, fmt.Errorf("embedding missing vectors: %w", err)
	}
	if n > 0 {
		s.afterVectorWrite(ctx)
	}
	return n, nil
}

// embedMissing embeds, with e, the items without a vector of e's model, in
// batches in id order (sqlkit.EmbedMissing).
func (s *Store) embedMissing(ctx context.Context, e h4r.Embedder) (int, error) {
	return sqlkit.EmbedMissing(ctx, e, s.missingBatch, s.embedAndWrite)
}

// missingBatch reads the next batch of items without a vector of model
// (sqlkit.MissingBatch); the items are read after the ids, outside their
// read, and one deleted meanwhile is left out.
func (s *Store) missingBatch(ctx context.Context, model, after string) (string, []*h4r.Item, error) {
	var ids []string
	err := s.read(ctx, func(ctx context.Context) error {
		ids = ids[:0]
		rows, err := s.pool.Query(ctx, `SELECT i.id FROM items i WHERE i.id > $2
			AND NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = i.id AND v.model = $1)
			ORDER BY i.id LIMIT $3`, model, after, sqlkit.VectorBatch)
		if err != nil {
			return err
		}
		var id string
		_, err = pgx.ForEachRow(rows, []any{&id}, func() error { ids = append(ids, id); return nil })
		return err
	})
	if err != nil || len(ids) == 0 {
		return "", nil, err
	}
	byID, err := s.readByID(ctx, ids)
	if err != nil {
		return "", nil, err
	}
	batch := make([]*h4r.Item, 0, len(ids))
	for _, id := range ids {
		if it := byID[id]; it != nil { // deleted meanwhile: nothing to embed
			batch = append(batch, it)
		}
	}
	return ids[len(ids)-1], batch, nil
}

// embedAndWrite embeds items with e and writes their vectors under e's
// model (maintenance: bounded by ctx only).
func (s *Store) embedAndWrite(ctx context.Context, e h4r.Embedder, items []*h4r.Item) error {
	if len(items) == 0 {
		return nil
	}
	ids, vecs, err := sqlkit.EmbedItems(ctx, e, items)
	if err != nil {
		return err
	}
	return s.writeTxWithin(ctx, 0, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, vectorLockSQL); err != nil { // orders vseq with every other vector write
			return fmt.Errorf("taking the vector lock: %w", err)
		}
		return writeVectors(ctx, tx, e.Model(), ids, vecs)
	})
}
