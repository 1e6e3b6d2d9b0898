package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/bm25"
	"github.com/h4r/h4r/internal/names"
	"github.com/h4r/h4r/internal/paged"
)

// textIndex keeps the BM25 index of items.text (index/bm25) in memory for
// the full-text generator: the exact top k without scoring every match,
// which FTS5's bm25() did (index/bm25/PERFORMANCE.md).
//
// The file stays the only truth. The index is built from the items table
// (at the first search, or WarmFullText at server start), never written to
// disk, so a crash leaves nothing to recover and nothing stale to trust: an
// acknowledged write is in the file, and the next process's index is built
// from the file. text_generation counts every change of the indexed state;
// the index remembers the generation it reflects. This process's writes
// update it in place, in commit order (under the store's write lock);
// a write by another process leaves it behind the file's generation, and
// the next search rebuilds it.
//
// Its zero value is an empty, unloaded index.
type textIndex struct {
	// mu guards the fields; a search holds it shared for its walk, an
	// update or a rebuild exclusively.
	mu     sync.RWMutex
	loaded bool
	gen    int64       // the text_generation the index reflects
	x      *bm25.Index // documents are items.seq

	// stems remembers the stems of the words this process's writes
	// analyse, old texts and new (writeStems of them); nil: none.
	stems *bm25.Stems

	// ids maps items.seq → items.id, for ties and reads.
	ids seqIDs
}

// seqIDs maps items.seq → items.id. seq is the items table's INTEGER
// PRIMARY KEY: SQLite gives a new row the largest seq plus one and an
// upsert keeps a row's seq, so the seqs in use run nearly densely from 1,
// which a paged array holds in about a quarter of a map's memory
// (bench/results/2026-11-29/memory-1m-rows.md). The ids themselves are in
// one array of bytes (internal/names), not a string each: at a million
// items a string each was a million objects for the collector to mark at
// every collection. An id whose row is deleted stays in the array until
// the ids no row holds outnumber those held, when the array is copied
// without them. Its zero value is empty.
type seqIDs struct {
	names names.List
	num   paged.Array[uint32] // 1 + the number of seq's id in names; 0: none
	dead  int                 // ids in names that no seq holds
}

// Get returns seq's id, "" when it has none.
func (m *seqIDs) Get(seq uint32) string {
	if n := m.num.Get(seq); n != 0 {
		return m.names.At(n - 1)
	}
	return ""
}

// Set makes id seq's id.
func (m *seqIDs) Set(seq uint32, id string) {
	if n := m.num.Get(seq); n != 0 {
		if m.names.At(n-1) == id {
			return // a replaced row keeps its id
		}
		m.dead++
	}
	m.num.Set(seq, m.names.Append(id)+1)
	m.compact()
}

// add makes a copy of id seq's id, when seq has none (a rebuild's rows).
func (m *seqIDs) add(seq uint32, id []byte) {
	m.num.Set(seq, m.names.AppendBytes(id)+1)
}

// Delete forgets seq's id.
func (m *seqIDs) Delete(seq uint32) {
	if m.num.Get(seq) == 0 {
		return
	}
	m.num.Delete(seq)
	m.dead++
	m.compact()
}

// All yields every seq with its id.
func (m *seqIDs) All() iter.Seq2[uint32, string] {
	return func(yield func(uint32, string) bool) {
		for seq, n := range m.num.All() {
			if !yield(seq, m.names.At(n-1)) {
				return
			}
		}
	}
}

// compact copies the ids still held into a new array when those no row
// holds outnumber them: each copy follows as many deletes as it moves ids.
func (m *seqIDs) compact() {
	if m.dead <= m.num.Len() {
		return
	}
	var kept names.List
	kept.Grow(m.num.Len())
	for seq, n := range m.num.All() {
		m.num.Set(seq, kept.Append(m.names.At(n-1))+1)
	}
	m.names, m.dead = kept, 0
}

// current reports whether the index reflects at least generation gen.
// The counter only grows, and an update is applied only on top of the
// state it followed, so a larger generation is a later state of the file.
func (t *textIndex) current(gen int64) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.loaded && t.gen >= gen
}

// writeStems is how many words' stems the text index remembers for the
// analysis of writes: a Zipf vocabulary's most frequent words, most of
// any text; about 2.5 MB for ordinary words, at most about 6 MB
// (bm25.Stems keeps no word over 64 bytes), as the learned embedder's.
const writeStems = 1 << 15

// textLoadBatch is how many texts a rebuild analyses at once.
const textLoadBatch = 4096

func readTextGeneration(ctx context.Context, tx *sql.Tx) (int64, error) {
	return readCounterSQL(ctx, tx, textCounter)
}

// seqOf converts an items.seq to the index's document id.
func seqOf(seq int64) (uint32, error) {
	if seq < 0 || seq > math.MaxUint32 {
		return 0, h4r.Errorf(h4r.EEXHAUSTED, "", "item row %d is past the full-text index's limit of %d rows", seq, uint32(math.MaxUint32))
	}
	return uint32(seq), nil
}

// awaitOwnWrite waits until no write of this process is under way: a
// write holds writeMu from before its commit until it has updated what
// this process keeps in memory (the full-text index, the vectors, the
// graph, the item cache), so a reader that found memory behind the file
// waits here for that update instead of rebuilding from the file.
func (s *Store) awaitOwnWrite(ctx context.Context) error {
	if err := s.vectors.writeMu.lock(ctx); err != nil {
		return err
	}
	s.vectors.writeMu.Unlock()
	return nil
}

// ensureText makes the index reflect at least generation gen, read in the
// snapshot of the search's transaction tx.
func (s *Store) ensureText(ctx context.Context, tx *sql.Tx, gen int64) error {
	t := &s.text
	if t.current(gen) {
		return nil // the common case
	}
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if loaded {
		// A write of this process may sit between its commit and its
		// update of the index: wait for it rather than rebuild for it.
		if err := s.awaitOwnWrite(ctx); err != nil {
			return fmt.Errorf("waiting for a write to reach the full-text index: %w", err)
		}
		if t.current(gen) {
			return nil
		}
	}
	return s.rebuildText(ctx, tx)
}

// WarmFullText builds the full-text index from the file, so that the first
// search does not pay for it (about 2.6 s of CPU per 100,000 items,
// index/bm25/PERFORMANCE.md). A server calls it at start.
func (s *Store) WarmFullText(ctx context.Context) error {
	return s.readTx(ctx, func(tx *sql.Tx) error { return s.rebuildText(ctx, tx) })
}

// rebuildText builds the index from the items table as of tx's snapshot,
// unless it reflects that snapshot's generation already. It holds mu
// throughout: searches wait for it rather than build a second copy, and
// this process's writes that commit meanwhile wait to update it until it
// is built, then apply on top of it when they followed its snapshot (and
// are skipped when it includes them). The caller holds tx (a reader
// connection) before mu, as every search does: taking mu first and then
// waiting for a connection held by searches that wait for mu would
// deadlock.
func (s *Store) rebuildText(ctx context.Context, tx *sql.Tx) error {
	t := &s.text
	t.mu.Lock()
	defer t.mu.Unlock()
	err := func() error {
		gen, err := readTextGeneration(ctx, tx)
		if err != nil {
			return err
		}
		if t.loaded && t.gen >= gen {
			return nil // another search rebuilt it meanwhile
		}
		rows, err := tx.QueryContext(ctx, `SELECT seq, id, text FROM items`)
		if err != nil {
			return fmt.Errorf("reading the items' texts: %w", err)
		}
		// The texts are analysed and indexed a batch at a time, so that
		// only a batch of them is held at once besides the index: holding
		// every text and its analysis until the end made the load's peak
		// several times the index's size at a million items.
		var (
			seqs  []uint32
			texts []string
		)
		x := bm25.New()
		var prep bm25.Preparer // keeps stems from one batch to the next
		flush := func() error {
			for i, d := range prep.PrepareAll(texts) {
				if err := x.Put(seqs[i], d); err != nil {
					return err
				}
			}
			seqs, texts = seqs[:0], texts[:0]
			return nil
		}
		var (
			ids seqIDs
			id  sql.RawBytes // copied into ids: no string a row
		)
		for rows.Next() {
			var (
				seq  int64
				text string
			)
			if err := rows.Scan(&seq, &id, &text); err != nil {
				return errors.Join(fmt.Errorf("reading an item's text: %w", err), rows.Close())
			}
			doc, err := seqOf(seq)
			if err != nil {
				return errors.Join(err, rows.Close())
			}
			seqs = append(seqs, doc)
			texts = append(texts, text)
			ids.add(doc, id)
			if len(texts) == textLoadBatch {
				if err := flush(); err != nil {
					return errors.Join(err, rows.Close())
				}
			}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("reading the items' texts: %w", err)
		}
		if err := flush(); err != nil {
			return err
		}
		x.Trim()
		ids.names.Trim()
		t.loaded, t.gen, t.x, t.ids = true, gen, x, ids
		return nil
	}()
	if err != nil {
		return fmt.Errorf("building the full-text index: %w", err)
	}
	return nil
}

// textChange is one committed write's effect on the index.
type textChange struct {
	puts    []textPut
	deletes []uint32 // seqs
	// was is the analysis of the text each replaced or deleted row held
	// before the write, by seq: the index takes a document out only with
	// the analysis it was put with (bm25.Index.Delete).
	was map[uint32]bm25.Doc
}

// oldTexts returns the text of each row of ids that tx finds, by seq:
// read in a write before it changes them, for textChange.was.
func oldTexts(ctx context.Context, tx *sql.Tx, ids []string) (map[uint32]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	texts := map[uint32]string{}
	err := eachRowOf(ctx, tx, ids, "text", "the texts of the rows to write", func(seq uint32, text string) { texts[seq] = text })
	return texts, err
}

// eachRowOf calls each with the seq and the column col of every row of
// ids that tx finds; what names them in errors.
func eachRowOf(ctx context.Context, tx *sql.Tx, ids []string, col, what string, each func(seq uint32, value string)) error {
	list, err := jsonList(ids)
	if err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, `+col+` FROM items WHERE id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	for rows.Next() {
		var (
			seq   int64
			value string
		)
		if err := rows.Scan(&seq, &value); err != nil {
			return errors.Join(fmt.Errorf("reading %s: %w", what, err), rows.Close())
		}
		doc, err := seqOf(seq)
		if err != nil {
			return errors.Join(err, rows.Close())
		}
		each(doc, value)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	return nil
}

// analysed returns the analysis of texts, by the same seqs, made on every
// core with the stems the index remembers.
func (t *textIndex) analysed(texts map[uint32]string) map[uint32]bm25.Doc {
	if len(texts) == 0 {
		return nil
	}
	seqs := make([]uint32, 0, len(texts))
	list := make([]string, 0, len(texts))
	for seq, text := range texts {
		seqs = append(seqs, seq)
		list = append(list, text)
	}
	docs := make(map[uint32]bm25.Doc, len(texts))
	for i, d := range t.stems.PrepareAll(list) {
		docs[seqs[i]] = d
	}
	return docs
}

type textPut struct {
	seq  uint32
	id   string
	text string
	doc  *bm25.Doc // the text analysed before the write; nil: analyse it here
}

// prepareTexts analyses the texts of items about to be written, before the
// write transaction and on every core (analysis is the costly part of an
// index update). It returns nil while the index is not loaded: the update
// would be skipped.
func (s *Store) prepareTexts(items []encodedItem) []bm25.Doc {
	t := &s.text
	t.mu.RLock()
	x := t.x
	t.mu.RUnlock()
	if x == nil {
		return nil
	}
	texts := make([]string, len(items))
	for i := range items {
		texts[i] = items[i].item.Text
	}
	return t.stems.PrepareAll(texts)
}

// writtenSeqs returns the seq of each of ids, as the write transaction tx
// left them.
func writtenSeqs(ctx context.Context, tx *sql.Tx, ids []string) (map[string]uint32, error) {
	seqs := make(map[string]uint32, len(ids))
	err := eachRowOf(ctx, tx, ids, "id", "the written items' rows", func(seq uint32, id string) { seqs[id] = seq })
	return seqs, err
}

// applied updates the index after a committed write that moved the
// generation from before to after. The caller holds the store's write
// lock, so writes apply in commit order. When the index was not at before
// (not loaded, or another process wrote), it is left as it is and the next
// search rebuilds it. A failed update unloads it, for the same rebuild:
// among the failures, a row whose old text the write did not read.
func (t *textIndex) applied(before, after int64, change textChange) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded || t.gen != before {
		return
	}
	unload := func() { t.loaded, t.x, t.ids = false, nil, seqIDs{} }
	for _, seq := range change.deletes {
		if _, err := t.x.Delete(seq, change.was[seq]); err != nil {
			unload()
			return
		}
		t.ids.Delete(seq)
	}
	last := make(map[uint32]int, len(change.puts)) // a row written twice in a batch holds its last text
	for i, p := range change.puts {
		last[p.seq] = i
	}
	for i, p := range change.puts {
		if last[p.seq] != i {
			continue
		}
		var doc bm25.Doc
		if p.doc != nil {
			doc = *p.doc
		} else { // the index was not loaded when the write began
			doc = t.x.Prepare(p.text)
		}
		if _, err := t.x.Delete(p.seq, change.was[p.seq]); err != nil { // a replaced row
			unload()
			return
		}
		if err := t.x.Put(p.seq, doc); err != nil {
			unload()
			return
		}
		t.ids.Set(p.seq, p.id)
	}
	t.gen = after
}

// rankedText is one hit of the index: its row, its id and its BM25 score.
type rankedText struct {
	seq   uint32
	id    string
	score float64
}

// search returns the index's top k for the query terms, among the rows
// accept accepts (nil: all), best first; ties by item id.
func (t *textIndex) search(ctx context.Context, terms map[string]int, k int, accept func(seq uint32) bool) ([]rankedText, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !t.loaded {
		// Unloaded by a failed update since the caller ensured it.
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the full-text index is being rebuilt")
	}
	hits, err := t.x.Search(ctx, terms, k, bm25.SearchOptions{
		Accept: accept,
		Tie:    func(a, b uint32) int { return strings.Compare(t.ids.Get(a), t.ids.Get(b)) },
	})
	if err != nil {
		return nil, err
	}
	out := make([]rankedText, len(hits))
	for i, h := range hits {
		out[i] = rankedText{seq: h.ID, id: t.ids.Get(h.ID), score: h.Score}
	}
	return out, nil
}

// SearchTextIndex returns how many hits the in-memory BM25 index gives
// text, at most k, without reading their rows: the index's walk alone,
// which h4r bench latency reports as its floor. The text is analysed as
// the full-text generator analyses it.
func (s *Store) SearchTextIndex(ctx context.Context, text string, k int) (int, error) {
	terms := bm25.Query(s.analyzer.Terms(text))
	if len(terms) == 0 {
		return 0, nil
	}
	var n int
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		gen, err := s.readCounter(ctx, tx, textCounter)
		if err != nil {
			return err
		}
		if err := s.ensureText(ctx, tx, gen); err != nil {
			return err
		}
		ranked, err := s.text.search(ctx, terms, k, nil)
		n = len(ranked)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("searching the full-text index for %q: %w", text, err)
	}
	return n, nil
}
