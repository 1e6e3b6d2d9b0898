package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/sources"
)

// encodedItem is one validated, normalised item in the form the tables
// take, computed before the write transaction begins so that the write
// lock is held only for SQL.
type encodedItem struct {
	item      sources.Item
	content   *string // JSON, nil for SQL NULL
	metadata  string
	tags      string // JSON list
	byteSize  int
	tokens    int
	occurs    int      // how often the id appears in the batch: its version goes up by this much
	terms     []string // distinct lexemes of the text
	tfs       []int    // their counts, parallel to terms
	docLen    int
	searchTxt string
}

// Upsert validates, normalises and writes items in one transaction and
// returns their ids in input order. A batch with an invalid item is
// rejected whole with an *h4r.Error naming the field
// ("items[2].metadata.trust") and nothing is written. An id that exists
// already is replaced: its version goes up by one and its access count is
// kept. An id repeated within the batch is applied in order: the last one
// wins and the version goes up once per occurrence.
func (s *Store) Upsert(ctx context.Context, items []sources.Item) ([]string, error) {
	for i := range items {
		if err := items[i].Validate(fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
		if err := checkNUL(&items[i], fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
	}
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].ID
	}
	if len(items) == 0 {
		return ids, nil
	}
	now := s.now().UTC()
	// The last occurrence of an id wins; writing ids in sorted order takes
	// row locks in one order in every transaction.
	last := map[string]int{}
	occurs := map[string]int{}
	for i, it := range items {
		last[it.ID] = i
		occurs[it.ID]++
	}
	encoded := make([]encodedItem, 0, len(last))
	for _, id := range slices.Sorted(maps.Keys(last)) {
		i := last[id]
		e, err := s.encode(items[i], now, fmt.Sprintf("items[%d]", i))
		if err != nil {
			return nil, err
		}
		e.occurs = occurs[id]
		encoded = append(encoded, e)
	}
	if err := s.analyze(ctx, encoded); err != nil {
		return nil, fmt.Errorf("upserting %d items: %w", len(items), err)
	}
	err := s.writeTx(ctx, func(tx pgx.Tx) error { return s.writeItems(ctx, tx, encoded, now) })
	if err != nil {
		return nil, fmt.Errorf("upserting %d items: %w", len(items), err)
	}
	return ids, nil
}

// checkNUL rejects NUL characters, which Postgres text and jsonb cannot
// hold, naming the field. (The embedded store takes them; JSON clients
// rarely send them.)
func checkNUL(it *sources.Item, field string) error {
	bad := func(name, v string) error {
		if strings.IndexByte(v, 0) >= 0 {
			return h4r.Errorf(h4r.EINVALID, field+"."+name, "contains a NUL character, which the Postgres store cannot hold")
		}
		return nil
	}
	checks := []struct{ name, v string }{{"id", it.ID}, {"kind", it.Kind}, {"text", it.Text}, {"metadata.source", it.Metadata.Source}}
	for i, tag := range it.Metadata.Tags {
		checks = append(checks, struct{ name, v string }{fmt.Sprintf("metadata.tags[%d]", i), tag})
	}
	for i, l := range it.Links {
		checks = append(checks, struct{ name, v string }{fmt.Sprintf("links[%d].target", i), l.Target},
			struct{ name, v string }{fmt.Sprintf("links[%d].type", i), l.Type})
	}
	for _, c := range checks {
		if err := bad(c.name, c.v); err != nil {
			return err
		}
	}
	return nil
}

// encode normalises a copy of it and measures what budgets will measure:
// the bytes and tokens of the item as delivered, once, here.
func (s *Store) encode(it sources.Item, now time.Time, field string) (encodedItem, error) {
	it.Links = slices.Clone(it.Links) // Normalize sets link strengths: leave the caller's slice alone
	it.Normalize(now)
	delivered, err := it.Delivered().Encode()
	if err != nil {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field+".content", "content cannot be encoded as JSON: %v", err)
	}
	metadata, err := json.Marshal(it.Metadata)
	if err != nil {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field+".metadata", "metadata cannot be encoded as JSON: %v", err)
	}
	if strings.Contains(string(metadata), `\u0000`) {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field+".metadata", "contains a NUL character, which the Postgres store cannot hold")
	}
	whole, err := json.Marshal(it)
	if err != nil {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field, "item cannot be encoded as JSON: %v", err)
	}
	if len(whole) > sources.MaxItemBytes {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field, "item is %d bytes as JSON, the limit is %d", len(whole), sources.MaxItemBytes)
	}
	var content *string
	if it.Content != nil {
		b, err := json.Marshal(it.Content)
		if err != nil {
			return encodedItem{}, h4r.Errorf(h4r.EINVALID, field+".content", "content cannot be encoded as JSON: %v", err)
		}
		if strings.Contains(string(b), `\u0000`) {
			return encodedItem{}, h4r.Errorf(h4r.EINVALID, field+".content", "contains a NUL character, which the Postgres store cannot hold")
		}
		c := string(b)
		content = &c
	}
	tags := it.Metadata.Tags
	if tags == nil {
		tags = []string{}
	}
	tagsJSON, err := json.Marshal(tags)
	if err != nil {
		return encodedItem{}, fmt.Errorf("encoding the tags of %s: %w", field, err)
	}
	return encodedItem{
		item:      it,
		content:   content,
		metadata:  string(metadata),
		tags:      string(tagsJSON),
		byteSize:  len(delivered),
		tokens:    s.counter.Count(string(delivered)),
		searchTxt: words(it.Text, false, 0),
	}, nil
}

// analyze asks Postgres for the lexemes of every item's text and their
// counts, in one round trip and outside the write transaction.
func (s *Store) analyze(ctx context.Context, items []encodedItem) error {
	texts := make([]string, len(items))
	for i := range items {
		texts[i] = items[i].searchTxt
	}
	return s.read(ctx, func(ctx context.Context) error {
		for i := range items {
			items[i].terms, items[i].tfs, items[i].docLen = items[i].terms[:0], items[i].tfs[:0], 0
		}
		rows, err := s.pool.Query(ctx, `SELECT d.ord::int - 1, u.lexeme, cardinality(u.positions)
			FROM unnest($1::text[]) WITH ORDINALITY AS d (txt, ord),
			     LATERAL unnest(to_tsvector('`+textConfig+`', d.txt)) AS u`, texts)
		if err != nil {
			return fmt.Errorf("analysing the texts: %w", err)
		}
		defer rows.Close()
		var (
			i, tf int
			term  string
		)
		_, err = pgx.ForEachRow(rows, []any{&i, &term, &tf}, func() error {
			e := &items[i]
			e.terms = append(e.terms, term)
			e.tfs = append(e.tfs, tf)
			e.docLen += tf
			return nil
		})
		if err != nil {
			return fmt.Errorf("analysing the texts: %w", err)
		}
		return nil
	})
}

// refreshLimit is the largest corpus whose impacts a write recomputes when
// the average length has drifted; larger ones are refreshed by
// RefreshImpacts (h4r migrate --refresh-impacts).
const (
	refreshLimit = 20_000
	refreshDrift = 0.10
)

// corpusStats is the row of corpus_stats.
type corpusStats struct {
	nDocs, totalLen int64
	avgdlRef        float64
}

func (c corpusStats) avgdl() float64 {
	if c.nDocs == 0 {
		return 0
	}
	return float64(c.totalLen) / float64(c.nDocs)
}

// lockStats takes the write lock (the corpus_stats row) and reads it.
func lockStats(ctx context.Context, tx pgx.Tx) (corpusStats, error) {
	var c corpusStats
	err := tx.QueryRow(ctx, `SELECT n_docs, total_len, avgdl_ref FROM corpus_stats FOR UPDATE`).Scan(&c.nDocs, &c.totalLen, &c.avgdlRef)
	if err != nil {
		return c, fmt.Errorf("locking the corpus statistics: %w", err)
	}
	return c, nil
}

// removePostings deletes the postings of the items with these seqs and
// lowers the df of their terms.
func removePostings(ctx context.Context, tx pgx.Tx, seqs []int64) error {
	if len(seqs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM postings WHERE item_seq = ANY($1) RETURNING term_id)
		UPDATE terms t SET df = t.df - g.n
		FROM (SELECT term_id, count(*) AS n FROM gone GROUP BY term_id) g
		WHERE t.id = g.term_id`, seqs)
	if err != nil {
		return fmt.Errorf("removing old postings: %w", err)
	}
	return nil
}

func (s *Store) writeItems(ctx context.Context, tx pgx.Tx, items []encodedItem, now time.Time) error {
	stats, err := lockStats(ctx, tx)
	if err != nil {
		return err
	}
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].item.ID
	}

	// The items being replaced: their postings and lengths leave the
	// statistics.
	var oldSeqs []int64
	rows, err := tx.Query(ctx, `SELECT seq, doc_len FROM items WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
	if err != nil {
		return fmt.Errorf("reading the items being replaced: %w", err)
	}
	var seq, dl int64
	_, err = pgx.ForEachRow(rows, []any{&seq, &dl}, func() error {
		oldSeqs = append(oldSeqs, seq)
		stats.nDocs--
		stats.totalLen -= dl
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the items being replaced: %w", err)
	}
	if err := removePostings(ctx, tx, oldSeqs); err != nil {
		return err
	}

	// The rows. On conflict the row is updated in place, so that its seq
	// and access count survive.
	n := len(items)
	var (
		kinds, texts, metas, tagLists = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		contents                      = make([]*string, n)
		created                       = make([]time.Time, n)
		versions, sizes, toks, lens   = make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	)
	for i, e := range items {
		kinds[i], texts[i], metas[i], tagLists[i], contents[i] = e.item.Kind, e.item.Text, e.metadata, e.tags, e.content
		created[i] = e.item.Metadata.CreatedAt
		versions[i], sizes[i], toks[i], lens[i] = int32(e.occurs), int32(e.byteSize), int32(e.tokens), int32(e.docLen)
		stats.nDocs++
		stats.totalLen += int64(e.docLen)
	}
	rows, err = tx.Query(ctx, `INSERT INTO items (id, kind, text, content, metadata, tags, created_at, updated_at, version, byte_size, tokens, doc_len)
		SELECT u.id, u.kind, u.text, u.content::jsonb, u.metadata::jsonb,
		       ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.created_at, $12, u.version, u.byte_size, u.tokens, u.doc_len
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[],
		            $8::int[], $9::int[], $10::int[], $11::int[]) AS u (id, kind, text, content, metadata, tags, created_at, version, byte_size, tokens, doc_len)
		ORDER BY u.id
		ON CONFLICT (id) DO UPDATE SET
			kind = excluded.kind, text = excluded.text, content = excluded.content, metadata = excluded.metadata,
			tags = excluded.tags, created_at = excluded.created_at, updated_at = excluded.updated_at,
			version = items.version + excluded.version, byte_size = excluded.byte_size, tokens = excluded.tokens,
			doc_len = excluded.doc_len
		RETURNING id, seq`,
		ids, kinds, texts, contents, metas, tagLists, created, versions, sizes, toks, lens, now)
	if err != nil {
		return fmt.Errorf("writing the items: %w", err)
	}
	seqByID := make(map[string]int64, n)
	var id string
	if _, err := pgx.ForEachRow(rows, []any{&id, &seq}, func() error { seqByID[id] = seq; return nil }); err != nil {
		return fmt.Errorf("writing the items: %w", err)
	}

	if err := s.writePostings(ctx, tx, items, seqByID, &stats); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE corpus_stats SET n_docs = $1, total_len = $2, avgdl_ref = $3`,
		stats.nDocs, stats.totalLen, stats.avgdlRef); err != nil {
		return fmt.Errorf("updating the corpus statistics: %w", err)
	}
	return writeLinks(ctx, tx, items)
}

// writePostings adds the items' terms to the dictionary, their postings
// with impacts, and their counts to df. Impacts use the reference average
// length, so that all postings stay comparable; when the corpus is small
// and its average has drifted, every impact is recomputed here.
func (s *Store) writePostings(ctx context.Context, tx pgx.Tx, items []encodedItem, seqByID map[string]int64, stats *corpusStats) error {
	avg := stats.avgdl()
	switch {
	case stats.avgdlRef <= 0:
		stats.avgdlRef = avg
	case stats.nDocs <= refreshLimit && drifted(stats.avgdlRef, avg):
		stats.avgdlRef = avg
		if err := refreshImpacts(ctx, tx, avg); err != nil {
			return err
		}
	}
	distinct := map[string]int32{} // term → how many of these items hold it
	for _, e := range items {
		for _, t := range e.terms {
			distinct[t]++
		}
	}
	if len(distinct) == 0 {
		return nil
	}
	terms := make([]string, 0, len(distinct))
	for t := range distinct {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	rows, err := tx.Query(ctx, `WITH added AS (
			INSERT INTO terms (term, df) SELECT unnest($1::text[]), 0 ON CONFLICT (term) DO NOTHING RETURNING id, term)
		SELECT id, term FROM added UNION ALL SELECT id, term FROM terms WHERE term = ANY($1)`, terms)
	if err != nil {
		return fmt.Errorf("adding terms: %w", err)
	}
	termID := make(map[string]int32, len(terms))
	var (
		tid  int32
		term string
	)
	if _, err := pgx.ForEachRow(rows, []any{&tid, &term}, func() error { termID[term] = tid; return nil }); err != nil {
		return fmt.Errorf("adding terms: %w", err)
	}
	var postings [][]any
	for _, e := range items {
		seq := seqByID[e.item.ID]
		for j, t := range e.terms {
			postings = append(postings, []any{termID[t], impact(e.tfs[j], e.docLen, stats.avgdlRef), seq, int16(min(e.tfs[j], 32767))})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"postings"}, []string{"term_id", "impact", "item_seq", "tf"}, pgx.CopyFromRows(postings)); err != nil {
		return fmt.Errorf("writing %d postings: %w", len(postings), err)
	}
	ids := make([]int32, len(terms))
	counts := make([]int32, len(terms))
	for i, t := range terms {
		ids[i], counts[i] = termID[t], distinct[t]
	}
	if _, err := tx.Exec(ctx, `UPDATE terms t SET df = t.df + u.n FROM unnest($1::int[], $2::int[]) AS u (id, n) WHERE t.id = u.id`, ids, counts); err != nil {
		return fmt.Errorf("counting terms: %w", err)
	}
	return nil
}

func drifted(ref, avg float64) bool {
	return avg > 0 && (avg > ref*(1+refreshDrift) || avg < ref*(1-refreshDrift))
}

// refreshImpacts recomputes every posting's impact with the average length
// avg.
func refreshImpacts(ctx context.Context, tx pgx.Tx, avg float64) error {
	_, err := tx.Exec(ctx, `UPDATE postings p
		SET impact = (p.tf * ($2::float8 + 1) / (p.tf + $2::float8 * (1 - $3::float8 + $3::float8 * i.doc_len / $1::float8)))::real
		FROM items i WHERE i.seq = p.item_seq`, max(avg, 1), bm25K1, bm25B)
	if err != nil {
		return fmt.Errorf("recomputing BM25 impacts: %w", err)
	}
	return nil
}

// RefreshImpacts recomputes every posting's BM25 impact with the current
// average item length. Writes do it themselves while the store holds at
// most 20,000 items; a larger store whose items have grown or shrunk on
// average should run it now and then (h4r migrate --refresh-impacts). It
// holds the write lock while it runs.
func (s *Store) RefreshImpacts(ctx context.Context) error {
	return s.writeTx(ctx, func(tx pgx.Tx) error {
		stats, err := lockStats(ctx, tx)
		if err != nil {
			return err
		}
		if err := refreshImpacts(ctx, tx, stats.avgdl()); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE corpus_stats SET avgdl_ref = $1`, stats.avgdl())
		return err
	})
}

func writeLinks(ctx context.Context, tx pgx.Tx, items []encodedItem) error {
	ids := make([]string, len(items))
	var sources_, targets, types []string
	var positions []int32
	var strengths []float64
	for i, e := range items {
		ids[i] = e.item.ID
		for pos, l := range e.item.Links {
			sources_ = append(sources_, e.item.ID)
			positions = append(positions, int32(pos))
			targets = append(targets, l.Target)
			types = append(types, l.Type)
			strengths = append(strengths, l.Strength)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM links WHERE source = ANY($1)`, ids); err != nil {
		return fmt.Errorf("clearing old links: %w", err)
	}
	if len(sources_) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO links (source, position, target, type, strength)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::float8[])`,
		sources_, positions, targets, types, strengths)
	if err != nil {
		return fmt.Errorf("writing %d links: %w", len(sources_), err)
	}
	return nil
}

// writeTx runs fn in a transaction and commits it, or rolls it back when
// fn fails. Writes are not retried: after a lost connection nobody knows
// whether the commit landed.
func (s *Store) writeTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("beginning a write: %w", err)
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, rollback(tx))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing a write: %w", err)
	}
	return nil
}

// Get returns the item with the given id, with its links and the
// store-maintained metadata. It returns an *h4r.Error with code not_found
// when there is none.
func (s *Store) Get(ctx context.Context, id string) (*sources.Item, error) {
	if id == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	if strings.IndexByte(id, 0) >= 0 {
		return nil, h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	var items []*sources.Item
	err := s.read(ctx, func(ctx context.Context) error {
		var err error
		items, err = s.queryItems(ctx, `SELECT `+itemColumns+` FROM items i WHERE i.id = $1`, []any{id}, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("getting item %q: %w", id, err)
	}
	if len(items) == 0 {
		return nil, h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	return items[0], nil
}

// Delete removes the item with the given id, its postings and the links it
// holds. Links other items hold to it stay, as links to an item not yet
// ingested do. It returns an *h4r.Error with code not_found when there is
// no such item.
func (s *Store) Delete(ctx context.Context, id string) error {
	if id == "" {
		return h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	if strings.IndexByte(id, 0) >= 0 {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	found := false
	err := s.writeTx(ctx, func(tx pgx.Tx) error {
		stats, err := lockStats(ctx, tx)
		if err != nil {
			return err
		}
		var seq, dl int64
		err = tx.QueryRow(ctx, `DELETE FROM items WHERE id = $1 RETURNING seq, doc_len`, id).Scan(&seq, &dl)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if err := removePostings(ctx, tx, []int64{seq}); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE corpus_stats SET n_docs = $1, total_len = $2`, stats.nDocs-1, stats.totalLen-dl)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting item %q: %w", id, err)
	}
	if !found {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	return nil
}

// Count returns the number of items in the store, from the statistics
// every write keeps exact (count(*) would scan the table).
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT n_docs FROM corpus_stats`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("counting items: %w", err)
	}
	return int(n), nil
}

// itemColumns are the columns queryItems decodes, from the items table
// aliased as i: itemFields, then the links as one JSON list.
const itemColumns = itemFields + `,
	(SELECT json_agg(json_build_object('type', l.type, 'target', l.target, 'strength', l.strength) ORDER BY l.position)
	 FROM links l WHERE l.source = i.id)`

// itemFields are the item's own columns, without its links.
const itemFields = `i.id, i.kind, i.text, i.content, i.metadata, i.updated_at, i.version,
	i.access_count, i.last_accessed_at, i.byte_size, i.tokens`

// queryItems runs query, whose first columns are itemColumns, and returns
// the items. When the query selects more columns, extra returns the
// destinations to scan them into for the row being read.
func (s *Store) queryItems(ctx context.Context, query string, args []any, extra func() []any) ([]*sources.Item, error) {
	return queryItemsOn(ctx, s.pool, query, args, extra)
}

// querier runs a query on the pool, or in a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryItemsOn is queryItems on q.
func queryItemsOn(ctx context.Context, q querier, query string, args []any, extra func() []any) ([]*sources.Item, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("querying items: %w", err)
	}
	defer rows.Close()
	var items []*sources.Item
	for rows.Next() {
		var (
			it                        sources.Item
			content, metadata, links  []byte
			updatedAt                 time.Time
			lastAccessedAt            *time.Time
			version, byteSize, tokens int32
			accessCount               int64
		)
		dest := []any{&it.ID, &it.Kind, &it.Text, &content, &metadata, &updatedAt, &version,
			&accessCount, &lastAccessedAt, &byteSize, &tokens, &links}
		if extra != nil {
			dest = append(dest, extra()...)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("reading an item row: %w", err)
		}
		if content != nil {
			if err := json.Unmarshal(content, &it.Content); err != nil {
				return nil, fmt.Errorf("decoding the content of item %q: %w", it.ID, err)
			}
		}
		if err := json.Unmarshal(metadata, &it.Metadata); err != nil {
			return nil, fmt.Errorf("decoding the metadata of item %q: %w", it.ID, err)
		}
		if links != nil {
			if err := json.Unmarshal(links, &it.Links); err != nil {
				return nil, fmt.Errorf("decoding the links of item %q: %w", it.ID, err)
			}
		}
		m := &it.Metadata
		m.Version, m.AccessCount, m.ByteSize, m.Tokens = int(version), accessCount, int(byteSize), int(tokens)
		m.UpdatedAt = updatedAt.UTC()
		m.LastAccessedAt = time.Time{}
		if lastAccessedAt != nil {
			m.LastAccessedAt = lastAccessedAt.UTC()
		}
		items = append(items, &it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading item rows: %w", err)
	}
	return items, nil
}

// eachPage is how many items Each reads per query.
const eachPage = 500

// Each calls fn for every item, in id order, reading them a page at a
// time so that a large store is never held in memory. It stops at fn's
// first error and returns it. Items written while Each runs may or may not
// be visited.
func (s *Store) Each(ctx context.Context, fn func(*sources.Item) error) error {
	after := ""
	for {
		var page []*sources.Item
		err := s.read(ctx, func(ctx context.Context) error {
			var err error
			page, err = s.queryItems(ctx, `SELECT `+itemColumns+` FROM items i WHERE i.id > $1 ORDER BY i.id LIMIT $2`, []any{after, eachPage}, nil)
			return err
		})
		if err != nil {
			return fmt.Errorf("reading items after %q: %w", after, err)
		}
		for _, it := range page {
			if err := fn(it); err != nil {
				return err
			}
		}
		if len(page) < eachPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
}
