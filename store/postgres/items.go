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
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// encodedItem is one validated, normalised item in the form the tables
// take, computed before the write transaction begins so that the write
// lock is held only for SQL.
type encodedItem struct {
	item      h4r.Item
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
func (s *Store) Upsert(ctx context.Context, items []h4r.Item) ([]string, error) {
	return s.Replace(ctx, items, nil)
}

// Replace upserts items and deletes the items with the ids in deletes, in
// one transaction: a reader sees all of it or none of it, and a failure
// leaves nothing of it (ingestion replaces a changed file's chunks so).
// An id in deletes that names no item is no error; one that is also among
// items is (the caller would not know which wins).
func (s *Store) Replace(ctx context.Context, items []h4r.Item, deletes []string) ([]string, error) {
	return s.replace(ctx, items, deletes, nil)
}

// ReplaceIf is Replace, done only when check holds in its transaction;
// otherwise nothing is written and the error wraps h4r.ErrVersionConflict.
func (s *Store) ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) ([]string, error) {
	return s.replace(ctx, items, deletes, &check)
}

func (s *Store) replace(ctx context.Context, items []h4r.Item, deletes []string, check *h4r.VersionCheck) ([]string, error) {
	if err := checkDeletes(items, deletes); err != nil {
		return nil, err
	}
	for i := range items {
		if err := items[i].Validate(fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
		if err := items[i].CheckNUL(fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
	}
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].ID
	}
	// Deleted in sorted order, as items are written, so that two writers
	// take row locks in one order.
	deletes = slices.Sorted(slices.Values(deletes))
	deletes = slices.Compact(deletes)
	deletes = slices.DeleteFunc(deletes, func(id string) bool { return strings.IndexByte(id, 0) >= 0 }) // no such item
	if len(items) == 0 && len(deletes) == 0 && check == nil {
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
	// Vectors (vectors.go) are made before the write and its deadline.
	texts, vecIDs := make([]string, len(encoded)), make([]string, len(encoded))
	for i, e := range encoded {
		texts[i], vecIDs[i] = e.item.Text, e.item.ID
	}
	embedder, vecs := s.embedTexts(ctx, texts)
	var (
		termID     map[string]int32
		termsEpoch int64
	)
	write := func(ctx context.Context, tx pgx.Tx) error {
		// A delete drops vectors by cascade: it takes the vector lock
		// first. A write of vectors alone takes it last (below).
		stats, err := lockStats(ctx, tx, false, len(deletes) > 0)
		if err != nil {
			return err
		}
		if len(termID) > 0 && stats.termsEpoch != termsEpoch {
			return errTermsMoved
		}
		if check != nil {
			if err := checkVersion(ctx, tx, *check); err != nil {
				return err
			}
		}
		if err := deleteItems(ctx, tx, deletes, stats); err != nil {
			return err
		}
		var tail batch
		if len(encoded) > 0 {
			if err := s.writeItems(ctx, tx, encoded, now, termID, stats, &tail); err != nil {
				return err
			}
		}
		stats.queueSave(&tail)
		if err := tail.send(ctx, tx); err != nil {
			return err
		}
		if embedder == nil || len(encoded) == 0 {
			return nil
		}
		// The vector lock orders vseq values as commits; taken after the
		// rows, it is held only for the vectors and the commit, so that
		// writes with an embedder run side by side up to there. A write
		// with deletes holds it from its start; it and a write of one of
		// its ids can then wait for each other, and Postgres ends one, which
		// is run again (isDeadlock).
		if len(deletes) == 0 {
			if _, err := tx.Exec(ctx, vectorLockSQL); err != nil {
				return fmt.Errorf("taking the vector lock: %w", err)
			}
		}
		return writeVectors(ctx, tx, embedder.Model(), vecIDs, vecs)
	}
	var err error
	for attempt := 1; ; attempt++ {
		termID, termsEpoch, err = s.addTerms(ctx, encoded)
		if err != nil {
			break
		}
		err = s.writeTx(ctx, write)
		if errors.Is(err, errTermsMoved) {
			s.termIDs.reset(0)
		}
		if !(errors.Is(err, errInsertRace) || errors.Is(err, errTermsMoved) || isDeadlock(err)) || attempt == maxInsertRaces {
			break
		}
	}
	s.refreshIfDrifted(ctx) // failed or not: it held the statistics lock (postings.go)
	if err != nil {
		return nil, fmt.Errorf("upserting %d items: %w", len(items), err)
	}
	s.items.Drop(deletes...) // memory only: a deleted item is never a hit again
	s.afterVectorWrite(ctx)
	s.nudgeGraph()
	s.refreshPlannerStats(ctx)
	return ids, nil
}

// checkDeletes refuses an empty id in deletes and an id both deleted and
// written.
func checkDeletes(items []h4r.Item, deletes []string) error {
	written := make(map[string]bool, len(items))
	for _, it := range items {
		written[it.ID] = true
	}
	for i, id := range deletes {
		field := fmt.Sprintf("deletes[%d]", i)
		if id == "" {
			return h4r.Errorf(h4r.EINVALID, field, "item id is required")
		}
		if written[id] {
			return h4r.Errorf(h4r.EINVALID, field, "item %q is both written and deleted", id)
		}
	}
	return nil
}

// deleteItems deletes the items with the given ids (sorted) in tx, with
// their postings, keeping their last versions; ids of no item are passed
// over.
func deleteItems(ctx context.Context, tx pgx.Tx, ids []string, stats *corpusStats) error {
	if len(ids) == 0 {
		return nil
	}
	var seqs []int64
	for _, id := range ids {
		var seq, dl int64
		var version int32
		err := tx.QueryRow(ctx, `DELETE FROM items WHERE id = $1 RETURNING seq, doc_len, version`, id).Scan(&seq, &dl, &version)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("deleting item %q: %w", id, err)
		}
		// Keep the last version, so that the id written again goes on from it.
		if _, err := tx.Exec(ctx, `INSERT INTO deleted_versions (id, version) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET version = excluded.version`, id, version); err != nil {
			return fmt.Errorf("keeping the version of item %q: %w", id, err)
		}
		seqs = append(seqs, seq)
		stats.add(-1, dl)
	}
	return removePostings(ctx, tx, seqs, stats.shard)
}

// encode normalises a copy of it and measures what budgets will measure:
// the bytes and tokens of the item as delivered, once, here.
func (s *Store) encode(it h4r.Item, now time.Time, field string) (encodedItem, error) {
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
	if len(whole) > h4r.MaxItemBytes {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field, "item is %d bytes as JSON, the limit is %d", len(whole), h4r.MaxItemBytes)
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

// errInsertRace is a write that found an item absent, so counted it as
// new, then replaced it: another write created it and committed in
// between. The write is rolled back and run again, now finding it.
var errInsertRace = errors.New("an item was created by another write meanwhile")

// errTermsMoved is a write whose term ids were read from another terms
// table than the one it found (a restore, a TRUNCATE): the cache is
// emptied and the write run again with the ids read anew.
var errTermsMoved = errors.New("the terms table changed under the term id cache")

// maxInsertRaces bounds how often a write runs again after errInsertRace
// or a deadlock.
const maxInsertRaces = 5

// isDeadlock tells whether Postgres ended the write to break a deadlock:
// writes no longer run one at a time, and a Replace whose deletes and
// writes cross another's rows can meet it; rolled back, it is run again.
func isDeadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "40P01"
}

// writeItems writes encoded items in tx, which holds a statistics shard
// (lockStats): the rows and their links, their postings (postings.go) and
// their part in the statistics, whose last statements it queues in tail.
func (s *Store) writeItems(ctx context.Context, tx pgx.Tx, items []encodedItem, now time.Time, termID map[string]int32, stats *corpusStats, tail *batch) error {
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
		stats.add(-1, dl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the items being replaced: %w", err)
	}
	if err := removePostings(ctx, tx, oldSeqs, stats.shard); err != nil {
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
		stats.add(1, int64(e.docLen))
	}
	// A new id starts after the version it had when it was last deleted
	// (deleted_versions), so that no (id, version) is ever reused.
	// The rows and the links go in one round trip.
	var b batch
	b.queue("writing the items", `INSERT INTO items (id, kind, text, content, metadata, tags, created_at, updated_at, version, byte_size, tokens, doc_len, token_encoding)
		SELECT u.id, u.kind, u.text, u.content::jsonb, u.metadata::jsonb,
		       ARRAY(SELECT jsonb_array_elements_text(u.tags::jsonb)), u.created_at, $12,
		       u.version + coalesce((SELECT d.version FROM deleted_versions d WHERE d.id = u.id), 0),
		       u.byte_size, u.tokens, u.doc_len, $13
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[],
		            $8::int[], $9::int[], $10::int[], $11::int[]) AS u (id, kind, text, content, metadata, tags, created_at, version, byte_size, tokens, doc_len)
		ORDER BY u.id
		ON CONFLICT (id) DO UPDATE SET
			kind = excluded.kind, text = excluded.text, content = excluded.content, metadata = excluded.metadata,
			tags = excluded.tags, created_at = excluded.created_at, updated_at = excluded.updated_at,
			version = items.version + excluded.version, byte_size = excluded.byte_size, tokens = excluded.tokens,
			doc_len = excluded.doc_len, token_encoding = excluded.token_encoding
		RETURNING id, seq, xmax <> '0'`,
		ids, kinds, texts, contents, metas, tagLists, created, versions, sizes, toks, lens, now, s.counter.Encoding())
	queueLinks(&b, items)
	seqByID := make(map[string]int64, n)
	err = func() error {
		br := tx.SendBatch(ctx, &b.b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("writing the items: %w", err)
		}
		var (
			id       string
			replaced bool
		)
		if _, err := pgx.ForEachRow(rows, []any{&id, &seq, &replaced}, func() error {
			seqByID[id] = seq
			if replaced && !slices.Contains(oldSeqs, seq) {
				return errInsertRace
			}
			return nil
		}); err != nil {
			return fmt.Errorf("writing the items: %w", err)
		}
		for _, what := range b.what[1:] {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		return br.Close()
	}()
	if err != nil {
		return err
	}
	return s.writePostings(ctx, tx, items, seqByID, termID, stats, tail)
}

// queueLinks queues in t the statements that replace the items' links.
func queueLinks(t *batch, items []encodedItem) {
	ids := make([]string, len(items))
	var sources_, targets, types, targetTypes, contexts []string
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
			targetTypes = append(targetTypes, l.TargetType)
			contexts = append(contexts, l.Context)
		}
	}
	t.queue("clearing old links", `DELETE FROM links WHERE source = ANY($1)`, ids)
	if len(sources_) == 0 {
		return
	}
	t.queue(fmt.Sprintf("writing %d links", len(sources_)), `INSERT INTO links (source, position, target, type, strength, target_type, context)
		SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[])`,
		sources_, positions, targets, types, strengths, targetTypes, contexts)
}

// writeTx runs fn in a transaction on the write pool and commits it, or
// rolls it back when fn fails, within the write deadline: waiting for a
// connection and for locks, and fn's statements. fn must use the ctx it is
// given. A write the deadline ends is rolled back and fails with an
// unavailable *h4r.Error (writedeadline). Writes are not retried: after a
// lost connection nobody knows whether the commit landed.
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return s.writeTxWithin(ctx, s.writeTimeout, fn)
}

// writeTxWithin is writeTx with the deadline d (none when d <= 0).
func (s *Store) writeTxWithin(ctx context.Context, d time.Duration, fn func(ctx context.Context, tx pgx.Tx) error) error {
	wctx, finish := sqlkit.WriteWithin(ctx, d)
	return finish(s.runWrite(ctx, wctx, fn))
}

// runWrite runs fn under wctx and commits under ctx: once every statement
// has run, the deadline does not cut the commit short, whose outcome would
// then be unknown.
func (s *Store) runWrite(ctx, wctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	tx, err := s.writes.Begin(wctx)
	if err != nil {
		return fmt.Errorf("beginning a write: %w", withCause(wctx, err))
	}
	if err := fn(wctx, tx); err != nil {
		return errors.Join(withCause(wctx, err), rollback(tx))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing a write: %w", err)
	}
	return nil
}

// withCause adds why ctx ended to err when it did: Postgres reports a
// statement cancelled on a deadline as its own error (57014), and pgxpool
// one that waited for a connection as a bare context error or not at all.
func withCause(ctx context.Context, err error) error {
	if cause := ctx.Err(); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// Get returns the item with the given id, with its links and the
// store-maintained metadata. It returns an *h4r.Error with code not_found
// when there is none.
func (s *Store) Get(ctx context.Context, id string) (*h4r.Item, error) {
	if id == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	if strings.IndexByte(id, 0) >= 0 {
		return nil, h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	var items []*h4r.Item
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
	write := func(ctx context.Context, tx pgx.Tx) error {
		found = false
		stats, err := lockStats(ctx, tx, false, true) // its vector goes by cascade
		if err != nil {
			return err
		}
		var seq, dl int64
		var version int32
		err = tx.QueryRow(ctx, `DELETE FROM items WHERE id = $1 RETURNING seq, doc_len, version`, id).Scan(&seq, &dl, &version)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		// Keep the last version, so that the id written again goes on from it.
		if _, err := tx.Exec(ctx, `INSERT INTO deleted_versions (id, version) VALUES ($1, $2)
			ON CONFLICT (id) DO UPDATE SET version = excluded.version`, id, version); err != nil {
			return err
		}
		stats.add(-1, dl)
		if err := removePostings(ctx, tx, []int64{seq}, stats.shard); err != nil {
			return err
		}
		return stats.save(ctx, tx)
	}
	// A write of the item's vector waits for the delete's vector lock
	// while holding the item's row: Postgres ends one of the two.
	var err error
	for attempt := 1; ; attempt++ {
		err = s.writeTx(ctx, write)
		if !isDeadlock(err) || attempt == maxInsertRaces {
			break
		}
	}
	s.refreshIfDrifted(ctx) // found or not: it held the statistics lock (postings.go)
	if err != nil {
		return fmt.Errorf("deleting item %q: %w", id, err)
	}
	if !found {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	s.items.Drop(id)        // memory only: a deleted item is never a hit again
	s.afterVectorWrite(ctx) // its vector went by cascade
	s.nudgeGraph()
	return nil
}

// Count returns the number of items in the store, from the statistics
// every write keeps exact in its shard (count(*) would scan the table).
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int64
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, `SELECT coalesce(sum(n_docs), 0)::bigint FROM stats_shards`).Scan(&n)
	})
	if err != nil {
		return 0, fmt.Errorf("counting items: %w", err)
	}
	return int(n), nil
}

// itemColumns are the columns queryItems decodes, from the items table
// aliased as i: itemFields, then the links as one JSON list.
const itemColumns = itemFields + `,
	(SELECT json_agg(json_build_object('type', l.type, 'target', l.target, 'strength', l.strength,
		'targetType', NULLIF(l.target_type, ''), 'context', NULLIF(l.context, '')) ORDER BY l.position)
	 FROM links l WHERE l.source = i.id)`

// itemFields are the item's own columns, without its links.
const itemFields = `i.id, i.kind, i.text, i.content, i.metadata, i.updated_at, i.version,
	i.access_count, i.last_accessed_at, i.byte_size, i.tokens`

// queryItems runs query, whose first columns are itemColumns, and returns
// the items. When the query selects more columns, extra returns the
// destinations to scan them into for the row being read.
func (s *Store) queryItems(ctx context.Context, query string, args []any, extra func() []any) ([]*h4r.Item, error) {
	return queryItemsOn(ctx, s.pool, query, args, extra)
}

// querier runs a query on the pool, or in a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryItemsOn is queryItems on q.
func queryItemsOn(ctx context.Context, q querier, query string, args []any, extra func() []any) ([]*h4r.Item, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("querying items: %w", err)
	}
	defer rows.Close()
	var items []*h4r.Item
	for rows.Next() {
		var (
			it                        h4r.Item
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
func (s *Store) Each(ctx context.Context, fn func(*h4r.Item) error) error {
	after := ""
	for {
		var page []*h4r.Item
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

// checkVersion fails with h4r.ErrVersionConflict unless the item is at
// the version check expects, and holds the item until the transaction
// ends: the row lock keeps other writers off an item that exists, and the
// advisory lock on its id serialises conditional writers of one that does
// not yet (FOR UPDATE locks no row then). Writes run at read committed, so
// the read after the locks sees the last committed version.
func checkVersion(ctx context.Context, tx pgx.Tx, check h4r.VersionCheck) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7151))`, check.ID); err != nil {
		return fmt.Errorf("locking item %q: %w", check.ID, err)
	}
	var v int
	err := tx.QueryRow(ctx, `SELECT version FROM items WHERE id = $1 FOR UPDATE`, check.ID).Scan(&v)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("reading the version of %q: %w", check.ID, err)
	}
	if v != check.Version {
		return fmt.Errorf("item %q is at version %d, the write expected %d: %w", check.ID, v, check.Version, h4r.ErrVersionConflict)
	}
	return nil
}
