package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/ann"
	"github.com/h4r/h4r/index/vecindex"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// Vector search limits.
const (
	defaultVectorLimit = 100
)

// WithVectors makes the store embed every item it writes with e and keep
// the vector beside it, for SearchVectors.
func WithVectors(e h4r.Embedder) Option { return func(o *options) { o.embedder = e } }

// EnableVectors does what WithVectors does, for wiring that opens the store
// before it chooses where vectors live (app: the store, or Qdrant). Call it
// before the store is used.
func (s *Store) EnableVectors(e h4r.Embedder) {
	s.vectors.mu.Lock()
	defer s.vectors.mu.Unlock()
	s.vectors.embedder = e
}

// vectorIndex keeps the vectors of one model in memory, compact (int8
// codes in an ann.Index: an exact scan below its threshold, an inverted
// file above), for the search's scan: reading
// 100k blobs from the file on every query would cost far more than
// comparing them (BenchmarkVectorSearch). The scan's best candidates are
// rescored with their float32 vectors read from the file, which stays the
// truth: the index is (re)loaded whenever vector_generation differs from
// the generation it was loaded at, and this process's own writes update it
// in place. Open sets ix.
type vectorIndex struct {
	writeMu writeLock // held across a vector write and its in-memory update, so they apply in commit order

	mu       sync.RWMutex
	embedder h4r.Embedder
	loaded   bool
	gen      int64
	model    string
	ix       *ann.Index

	// exact keeps float32 vectors read from the file for rescoring, as of
	// gen: the best candidates of common queries repeat, and reading them
	// was a third of a vector search (PERFORMANCE.md). load fills it when
	// every vector fits its bound, and searches then add what they read.
	// When they do not all fit, it stays empty (exactOff): a bound that
	// holds a fraction of the vectors serves about that fraction of a
	// search's candidates, for the whole bound's memory
	// (bench/results/2026-11-29/memory-1m-rows.md). Changed under exactMu
	// while mu is held (shared by searches, exclusively by load, put and
	// remove, which empty it or drop the id).
	exactMu    sync.RWMutex
	exact      map[string][]float32
	exactBytes int
	exactOff   bool // set by load when the vectors did not all fit the bound
	exactLimit int  // the bound in bytes; 0: exactCacheBytes (tests set less)
}

// exactCacheBytes bounds the float32 vectors kept for rescoring: 64 MiB is
// every vector of 30,000 items at 512 dimensions.
const exactCacheBytes = 64 << 20

// exactBound is the most bytes of float32 vectors exact holds.
func (v *vectorIndex) exactBound() int {
	if v.exactLimit > 0 {
		return v.exactLimit
	}
	return exactCacheBytes
}

func (v *vectorIndex) getEmbedder() h4r.Embedder {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.embedder
}

// accepts reports whether vec belongs in memory: a vector of the loaded
// model and dimension (any dimension while none is loaded).
func (v *vectorIndex) accepts(model string, vec []float32) bool {
	return model == v.model && (v.ix.Dim() == 0 || len(vec) == v.ix.Dim())
}

// put and remove change the in-memory vectors; the caller holds mu.
func (v *vectorIndex) put(id string, vec []float32) { v.ix.Put(id, vec); v.forgetExact(id) }

func (v *vectorIndex) remove(id string) { v.ix.Remove(id); v.forgetExact(id) }

// forgetExact drops the kept float32 vector of id; the caller holds mu.
func (v *vectorIndex) forgetExact(id string) {
	v.exactMu.Lock()
	defer v.exactMu.Unlock()
	if vec, ok := v.exact[id]; ok {
		delete(v.exact, id)
		v.exactBytes -= 4 * len(vec)
	}
}

// keptExact returns the kept float32 vectors of the candidates, in their
// order (nil for one not kept), if the index is still at generation gen
// (the caller's snapshot), and how many it found.
func (v *vectorIndex) keptExact(gen int64, cands []scored) (vecs [][]float32, found int) {
	vecs = make([][]float32, len(cands))
	v.mu.RLock()
	defer v.mu.RUnlock()
	if !v.loaded || v.gen != gen {
		return vecs, 0
	}
	v.exactMu.RLock()
	defer v.exactMu.RUnlock()
	for i, c := range cands {
		if vec, ok := v.exact[c.ID]; ok {
			vecs[i] = vec
			found++
		}
	}
	return vecs, found
}

// keepExact keeps float32 vectors read in a snapshot at generation gen,
// unless the index moved on; past the bound it drops arbitrary ones.
func (v *vectorIndex) keepExact(gen int64, vecs map[string][]float32) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	if !v.loaded || v.gen != gen {
		return
	}
	v.exactMu.Lock()
	defer v.exactMu.Unlock()
	if v.exactOff {
		return
	}
	if v.exact == nil {
		v.exact = map[string][]float32{}
	}
	for id, vec := range vecs {
		if old, ok := v.exact[id]; ok {
			v.exactBytes -= 4 * len(old)
		}
		v.exact[id] = vec
		v.exactBytes += 4 * len(vec)
	}
	for id, vec := range v.exact {
		if v.exactBytes <= v.exactBound() {
			break
		}
		delete(v.exact, id)
		v.exactBytes -= 4 * len(vec)
	}
}

// applied updates the in-memory index after a committed write that moved
// the generation from before to after. When the index was not current at
// before (another process wrote), it is left stale and the next search
// reloads it.
func (v *vectorIndex) applied(before, after int64, change func(*vectorIndex)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.loaded || v.gen != before {
		return
	}
	change(v)
	v.gen = after
}

func readGeneration(ctx context.Context, tx *sql.Tx) (int64, error) {
	return readCounterSQL(ctx, tx, vectorCounter)
}

// embedItems returns the vectors of the items' texts, or nil when the store
// has no embedder or embedding failed. A failed embedding does not fail the
// write: the store is the source of truth, the items are written without
// vectors (vector search misses them) and the log says to run h4r reindex.
func (s *Store) embedItems(ctx context.Context, items []encodedItem) (h4r.Embedder, [][]float32) {
	e := s.vectors.getEmbedder()
	if e != nil {
		e = h4r.PinEmbedder(e) // the model the vectors are stored under is the one that computed them
	}
	if e == nil || len(items) == 0 || !sqlkit.EmbedderReady(e) {
		return e, nil
	}
	texts := make([]string, len(items))
	for i := range items {
		texts[i] = items[i].item.Text
	}
	vecs, err := sqlkit.Embed(ctx, e, texts)
	if err != nil {
		s.log.WarnContext(ctx, "items written without vectors: vector search will miss them until h4r reindex",
			"model", e.Model(), "items", len(items), "error", err)
		return e, nil
	}
	return e, vecs
}

func deleteVectors(ctx context.Context, tx *sql.Tx, ids []string) error {
	list, err := jsonList(ids)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM item_vectors WHERE item_id IN (SELECT value FROM json_each(?))`, list); err != nil {
		return fmt.Errorf("deleting stale vectors: %w", err)
	}
	return nil
}

// putVectors writes the vectors of items that exist; an id deleted
// meanwhile (reindex runs beside ingest) is skipped rather than failing the
// foreign key. Rows go insertRowsChunk to a statement; an id given twice
// gets its last vector, as writing them in turn would leave.
func putVectors(ctx context.Context, tx *sql.Tx, model string, ids []string, vecs [][]float32) error {
	last := make(map[string]int, len(ids))
	for i, id := range ids {
		last[id] = i
	}
	args := make([]any, 0, 3*len(last))
	for i, id := range ids {
		if last[id] == i {
			args = append(args, id, model, vecindex.EncodeFloat32(vecs[i]))
		}
	}
	// SQLite needs the WHERE to tell an upsert's ON from a join's.
	err := insertRows(ctx, tx, `INSERT INTO item_vectors (item_id, model, vector)
		SELECT column1, column2, column3 FROM (VALUES `, `)
		WHERE EXISTS (SELECT 1 FROM items WHERE id = column1)
		ON CONFLICT (item_id) DO UPDATE SET model = excluded.model, vector = excluded.vector`, 3, args)
	if err != nil {
		return fmt.Errorf("writing %d vectors: %w", len(last), err)
	}
	return nil
}

// load reads every vector of model as of tx's snapshot, at generation gen.
// The caller holds mu.
func (v *vectorIndex) load(ctx context.Context, tx *sql.Tx, model string, gen int64) (err error) {
	rows, err := tx.QueryContext(ctx, `SELECT item_id, vector FROM item_vectors WHERE model = ?`, model)
	if err != nil {
		return fmt.Errorf("loading vectors: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	v.loaded, v.model = false, model
	v.ix.Reset()
	v.exactMu.Lock()
	v.exact, v.exactBytes, v.exactOff = nil, 0, false
	v.exactMu.Unlock()
	kept := exactLoader{limit: v.exactBound(), exact: map[string][]float32{}}
	for rows.Next() {
		var id string
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return fmt.Errorf("reading a vector row: %w", err)
		}
		vec, err := kept.decode(id, blob)
		if err != nil {
			return fmt.Errorf("vector of item %q: %w", id, err)
		}
		if d := v.ix.Dim(); d != 0 && len(vec) != d {
			return fmt.Errorf("vector of item %q has %d dimensions, others of model %s have %d: run h4r reindex", id, len(vec), model, d)
		}
		v.ix.Put(id, vec)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading vector rows: %w", err)
	}
	v.exactMu.Lock()
	v.exact, v.exactBytes, v.exactOff = kept.exact, kept.bytes, kept.overflowed
	v.exactMu.Unlock()
	v.loaded, v.gen = true, gen
	return nil
}

// exactLoader decodes the vector rows of a load. The float32 vectors are
// kept for rescoring as well while they fit in limit bytes (they are
// decoded here anyway): otherwise the first searches after a load read
// their candidates' rows again. Past the bound, the rows are decoded into
// one scratch vector, of which the index keeps only the codes, and
// overflowed is set: the load then keeps none (vectorIndex.exactOff).
type exactLoader struct {
	limit      int
	exact      map[string][]float32
	bytes      int       // 4 a component, as vectorIndex.exactBytes counts
	scratch    []float32 // never a kept vector: decoding overwrites it
	overflowed bool
}

// decode returns the vector of one row, kept in l.exact while every
// vector so far fits the bound.
func (l *exactLoader) decode(id string, blob []byte) ([]float32, error) {
	if l.overflowed || l.bytes+len(blob) > l.limit {
		if !l.overflowed {
			l.overflowed, l.exact, l.bytes = true, nil, 0 // the vectors kept so far go to the collector
		}
		vec, err := vecindex.DecodeFloat32(l.scratch, blob)
		l.scratch = vec
		return vec, err
	}
	vec, err := vecindex.DecodeFloat32(make([]float32, 0, len(blob)/4), blob)
	if err != nil {
		return nil, err
	}
	l.exact[id] = vec
	l.bytes += 4 * len(vec)
	return vec, nil
}

// scored is one vector hit before its item is read.
type scored = vecindex.Scored

// exactVectors reads the float32 vectors of model of ids (for rescoring).
func exactVectors(ctx context.Context, tx *sql.Tx, model string, ids []string) (_ map[string][]float32, err error) {
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT item_id, vector FROM item_vectors
		WHERE item_id IN (SELECT value FROM json_each(?)) AND model = ?`, list, model)
	if err != nil {
		return nil, fmt.Errorf("reading vectors to rescore: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	out := make(map[string][]float32, len(ids))
	for rows.Next() {
		var id string
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, fmt.Errorf("reading a vector row: %w", err)
		}
		vec, err := vecindex.DecodeFloat32(nil, blob)
		if err != nil {
			return nil, fmt.Errorf("vector of item %q: %w", id, err)
		}
		out[id] = vec
	}
	return out, rows.Err()
}

// rescore reads the exact vectors of the candidates (kept ones from
// memory, the rest from the file in tx's snapshot, at vector generation
// gen) and returns the best limit of them by exact score, at least
// minScore.
func (s *Store) rescore(ctx context.Context, tx *sql.Tx, gen int64, model string, q []float32, cands []scored, limit int, minScore float64) ([]scored, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	vecs, found := s.vectors.keptExact(gen, cands)
	if found < len(cands) {
		missing := make([]string, 0, len(cands)-found)
		for i, c := range cands {
			if vecs[i] == nil {
				missing = append(missing, c.ID)
			}
		}
		read, err := exactVectors(ctx, tx, model, missing)
		if err != nil {
			return nil, err
		}
		s.vectors.keepExact(gen, read)
		for i, c := range cands {
			if vecs[i] == nil {
				vecs[i] = read[c.ID]
			}
		}
	}
	return vecindex.RescoreAligned(q, cands, vecs, limit, minScore), nil
}

// ensureLoaded (re)loads the vectors of model into memory unless they
// reflect tx's snapshot or a later state, and returns the snapshot's
// vector generation. The generation only grows and this process applies
// its own writes in commit order, so an index ahead of the snapshot (a
// write of this process committed after the search's read began) is a
// later state of the file, as the text index and the graph take it: the
// scan may then see that write's vectors, while rescoring and the items
// come from the snapshot, which drops what the snapshot does not hold.
// Reloading instead took the index back to the older snapshot, so that
// under steady ingest searches reloaded every vector again and again.
func (s *Store) ensureLoaded(ctx context.Context, tx *sql.Tx, model string) (int64, error) {
	gen, err := s.readCounter(ctx, tx, vectorCounter)
	if err != nil {
		return 0, err
	}
	v := &s.vectors
	v.mu.RLock()
	current, loaded := v.current(model, gen), v.loaded && v.model == model
	v.mu.RUnlock()
	if current { // the common case: searches do not queue behind each other
		return gen, nil
	}
	if loaded {
		// A write of this process may sit between its commit and its
		// update of the index: wait for it, as the text index and the
		// graph do, rather than reload every vector for it: under steady
		// ingest that reload, under the exclusive lock, stalled every
		// hybrid search.
		if err := s.awaitOwnWrite(ctx); err != nil {
			return 0, fmt.Errorf("waiting for a write to reach the vectors in memory: %w", err)
		}
		v.mu.RLock()
		current = v.current(model, gen)
		v.mu.RUnlock()
		if current {
			return gen, nil
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.current(model, gen) {
		return gen, nil // another search loaded it meanwhile
	}
	return gen, v.load(ctx, tx, model, gen)
}

// current reports whether the index holds model's vectors as of generation
// gen or later; the caller holds mu.
func (v *vectorIndex) current(model string, gen int64) bool {
	return v.loaded && v.model == model && v.gen >= gen
}

// WarmVectors loads the vectors of model into memory, so that the first
// search does not pay for it (about 0.2 s per 10,000 vectors of 512
// dimensions, BenchmarkVectorSearch load-ms). A server calls it at start.
func (s *Store) WarmVectors(ctx context.Context, model string) error {
	err := s.readTx(ctx, func(tx *sql.Tx) error { _, err := s.ensureLoaded(ctx, tx, model); return err })
	if err != nil {
		return fmt.Errorf("loading vectors: %w", err)
	}
	return nil
}

// filterGrowth: a filtered search checks the best limit×4 hits against the
// filters, then ×16, and so on, so that a filter most items pass costs a
// few indexed lookups, and one few pass costs what reading every matching
// id would (BenchmarkVectorSearch/…/vector_filtered).
const filterGrowth = 4

// SearchVectors returns the items whose vectors of model are most similar
// (cosine) to vector, best first, with the cosine as Score, restricted to
// the items that pass filters (the same filters as full-text search). It
// scans the vectors in memory (int8, approximate scores; above the
// threshold of WithVectorANNThreshold only the lists nearest the query),
// then rescores
// the best vecindex.Candidates(limit) with their float32 vectors from the
// file. Hits under minScore are left out; limit 0 means 100. The vectors
// are held in memory after the first search.
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
	where, args, err := whereFilters(filters)
	if err != nil {
		return nil, err
	}
	v := &s.vectors
	var hits []h4r.Hit
	err = s.readTx(ctx, func(tx *sql.Tx) error {
		gen, err := s.ensureLoaded(ctx, tx, model)
		if err != nil {
			return err
		}
		v.mu.RLock()
		d := v.ix.Dim()
		v.mu.RUnlock()
		if d != 0 && d != len(vector) {
			return h4r.Errorf(h4r.EINVALID, "vector", "query vector has %d dimensions, the stored vectors of %s have %d", len(vector), model, d)
		}
		// Scores are approximate (int8), within a slack of the exact ones
		// the ranker allows for; above the threshold only the lists nearest
		// the query are scanned.
		rank := ann.NewRanker(v.mu.RLocker(), v.ix, vector, minScore)
		defer rank.Release()
		want := vecindex.Candidates(limit)
		var cands []scored
		if where == "" {
			cands, _ = rank.Top(want)
		} else {
			// The filters are checked on growing rankings; above the
			// threshold each scans proportionally more lists.
			mem := memFilterOf(filters) // nil: the filters are checked with SQL
			cands, err = ann.TopPassing(ctx, rank.Top, want, func(ctx context.Context, ids []string) (map[string]bool, error) {
				return s.passingByID(ctx, tx, mem, ids, where, args)
			})
			if err != nil {
				return err
			}
		}
		top, err := s.rescore(ctx, tx, gen, model, vector, cands, limit, minScore)
		if err != nil {
			return err
		}
		hits, err = s.hydrate(ctx, tx, top)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("vector search: %w", err)
	}
	return hits, nil
}

// passingIDs returns which of ids belong to items that pass the filter
// conditions where.
func passingIDs(ctx context.Context, tx *sql.Tx, ids []string, where string, args []any) (_ map[string]bool, err error) {
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT i.id FROM items i WHERE i.id IN (SELECT value FROM json_each(?))`+where,
		append([]any{list}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("applying filters: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	pass := make(map[string]bool, len(ids))
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reading a filtered id: %w", err)
		}
		pass[id] = true
	}
	return pass, rows.Err()
}

// hydrate reads the items of the hits, keeping their order
// (sqlkit.Hydrate). An item deleted by another process since the vectors
// were loaded is left out.
func (s *Store) hydrate(ctx context.Context, tx *sql.Tx, top []scored) ([]h4r.Hit, error) {
	return sqlkit.Hydrate(ctx, top, func(ctx context.Context, ids []string) (map[string]*h4r.Item, error) {
		return s.readItems(ctx, tx, ids)
	})
}

// MissingVectors counts the items that have no vector of model: written
// while embedding failed, or before vectors (or this model) were enabled.
func (s *Store) MissingVectors(ctx context.Context, model string) (int, error) {
	var n int
	err := s.readers.QueryRowContext(ctx, `SELECT count(*) FROM items i
		WHERE NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = i.id AND v.model = ?)`, model).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting items without vectors: %w", err)
	}
	return n, nil
}

// ReindexVectors embeds every item again with the store's embedder, in
// batches, deletes the vectors of other models, then embeds the items left
// without a vector of its model (EmbedMissingVectors: a write that
// embedded with a model learned meanwhile). progress, when not nil, is
// called after each batch with the items done so far. It returns the
// number of items embedded.
func (s *Store) ReindexVectors(ctx context.Context, progress func(done int)) (int, error) {
	e := s.vectors.getEmbedder()
	if e == nil {
		return 0, errors.New("reindexing vectors: the store has no embedder (WithVectors)")
	}
	e = h4r.PinEmbedder(e) // every batch of one model, the one the vectors are stored under
	done, err := sqlkit.EmbedAll(ctx, e, s.Each, s.embedAndWrite, progress)
	if err == nil {
		err = s.pruneVectors(ctx, e.Model())
	}
	if err != nil {
		return done, fmt.Errorf("reindexing vectors: %w", err)
	}
	n, err := s.embedMissing(ctx, e)
	if err != nil {
		return done, fmt.Errorf("reindexing vectors: %w", err)
	}
	return done + n, nil
}

// EmbedMissingVectors embeds the items that have no vector of the model
// the store's embedder holds now, and returns how many it embedded. An
// item gets there when its write embedded with a model that a learning
// replaced before the write committed, or while embedding failed; its
// vector, stored under the model that computed it, is never compared with
// the current model's. An embedder that is not ready embeds nothing.
//
// The search reads every item (at a million, about two seconds of CPU),
// and a server runs it every minute; it is skipped when nothing that
// could leave an item without a vector happened since the last complete
// one began: no item written, deleted or given another text (the text
// generation), no vector written or deleted (the vector generation, which
// the search's own writes raise, so that one more search confirms them),
// and the same model. Access counts and metadata do not count.
func (s *Store) EmbedMissingVectors(ctx context.Context) (int, error) {
	e := s.vectors.getEmbedder()
	if e == nil {
		return 0, errors.New("embedding missing vectors: the store has no embedder (WithVectors)")
	}
	pinned := h4r.PinEmbedder(e)
	mark, err := s.sweepMark(ctx, pinned.Model())
	if err != nil {
		return 0, fmt.Errorf("embedding missing vectors: %w", err)
	}
	s.sweptMu.Lock()
	done := s.swept == mark
	s.sweptMu.Unlock()
	if done {
		return 0, nil
	}
	s.sweeps.Add(1)
	n, err := s.embedMissing(ctx, pinned)
	if err != nil {
		return n, fmt.Errorf("embedding missing vectors: %w", err)
	}
	s.sweptMu.Lock()
	s.swept = mark
	s.sweptMu.Unlock()
	return n, nil
}

// sweepMark is what a search for items without a vector of a model saw
// when it began (EmbedMissingVectors).
type sweepMark struct {
	model         string
	text, vectors int64 // the text and vector generations
}

// sweepMark reads the generations a search for items without a vector of
// model begins at.
func (s *Store) sweepMark(ctx context.Context, model string) (sweepMark, error) {
	m := sweepMark{model: model}
	err := s.readTx(ctx, func(tx *sql.Tx) (err error) {
		if m.text, err = s.readCounter(ctx, tx, textCounter); err != nil {
			return err
		}
		m.vectors, err = s.readCounter(ctx, tx, vectorCounter)
		return err
	})
	return m, err
}

// embedMissing embeds, with e, the items without a vector of e's model, in
// batches in id order (sqlkit.EmbedMissing).
func (s *Store) embedMissing(ctx context.Context, e h4r.Embedder) (int, error) {
	return sqlkit.EmbedMissing(ctx, e, s.missingBatch, s.embedAndWrite)
}

// missingBatch reads the next batch of items without a vector of model
// (sqlkit.MissingBatch), the ids and their items in one read transaction.
func (s *Store) missingBatch(ctx context.Context, model, after string) (last string, batch []*h4r.Item, err error) {
	err = s.readTx(ctx, func(tx *sql.Tx) (err error) {
		batch, last = nil, ""
		rows, err := tx.QueryContext(ctx, `SELECT i.id FROM items i WHERE i.id > ?
			AND NOT EXISTS (SELECT 1 FROM item_vectors v WHERE v.item_id = i.id AND v.model = ?)
			ORDER BY i.id LIMIT ?`, after, model, sqlkit.VectorBatch)
		if err != nil {
			return err
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return errors.Join(err, rows.Close())
			}
			ids = append(ids, id)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(ids) == 0 {
			return err
		}
		byID, err := s.readItems(ctx, tx, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if it := byID[id]; it != nil {
				batch = append(batch, it)
			}
		}
		last = ids[len(ids)-1]
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return last, batch, nil
}

// embedAndWrite embeds items with e and writes their vectors under e's
// model.
func (s *Store) embedAndWrite(ctx context.Context, e h4r.Embedder, items []*h4r.Item) error {
	if len(items) == 0 {
		return nil
	}
	ids, vecs, err := sqlkit.EmbedItems(ctx, e, items)
	if err != nil {
		return err
	}
	return s.writeVectors(ctx, e.Model(), ids, vecs)
}

// writeVectors writes vectors of existing items and updates memory. It is
// maintenance (h4r reindex), bounded by ctx only, not the write deadline.
func (s *Store) writeVectors(ctx context.Context, model string, ids []string, vecs [][]float32) error {
	v := &s.vectors
	if err := v.writeMu.lock(ctx); err != nil {
		return fmt.Errorf("writing %d vectors: waiting for the writer: %w", len(ids), err)
	}
	defer v.writeMu.Unlock()
	var before, after int64
	err := s.runTx(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		if before, err = readGeneration(ctx, tx); err != nil {
			return err
		}
		if err := putVectors(ctx, tx, model, ids, vecs); err != nil {
			return err
		}
		after, err = readGeneration(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("writing %d vectors: %w", len(ids), err)
	}
	// An id deleted meanwhile was not written; memory cannot tell, so it
	// reloads on the next search unless nothing but these rows changed.
	v.applied(before, after, func(v *vectorIndex) {
		if after-before != int64(len(ids)) {
			v.loaded = false
			return
		}
		for i, id := range ids {
			if v.accepts(model, vecs[i]) {
				v.put(id, vecs[i])
			} else {
				v.remove(id)
			}
		}
	})
	return nil
}

// pruneVectors deletes the vectors of models other than keep (maintenance,
// as writeVectors).
func (s *Store) pruneVectors(ctx context.Context, keep string) error {
	v := &s.vectors
	if err := v.writeMu.lock(ctx); err != nil {
		return fmt.Errorf("deleting vectors of other models: waiting for the writer: %w", err)
	}
	defer v.writeMu.Unlock()
	err := s.runTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM item_vectors WHERE model <> ?`, keep)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting vectors of other models: %w", err)
	}
	return nil // memory holds one model's vectors; others were never loaded, or reload on generation
}
