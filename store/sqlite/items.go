package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/internal/sqlkit"
)

// encodedItem is one validated, normalised item in the form the tables
// take. Everything here is computed before the write transaction begins, so
// that the single writer holds the lock only for SQL.
type encodedItem struct {
	item      h4r.Item
	content   any // JSON text, or nil for SQL NULL
	metadata  string
	createdAt string
	byteSize  int
	tokens    int
}

// Upsert validates, normalises and writes items in one transaction and
// returns their ids in input order. A batch with an invalid item is rejected
// whole: the error is an *h4r.Error naming the field ("items[2].metadata.trust")
// and nothing is written. An id that exists already is replaced: its version
// goes up by one and its access count is kept. An id repeated within the
// batch is applied in order, so the last one wins.
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
	written := make(map[string]bool, len(items))
	for _, it := range items {
		written[it.ID] = true
	}
	for i, id := range deletes {
		field := fmt.Sprintf("deletes[%d]", i)
		if id == "" {
			return nil, h4r.Errorf(h4r.EINVALID, field, "item id is required")
		}
		if written[id] {
			return nil, h4r.Errorf(h4r.EINVALID, field, "item %q is both written and deleted", id)
		}
	}
	for i := range items {
		if err := items[i].Validate(fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
		// What Postgres cannot hold is refused here too, so that an item
		// is stored the same by either store.
		if err := items[i].CheckNUL(fmt.Sprintf("items[%d]", i)); err != nil {
			return nil, err
		}
	}
	now := s.now().UTC()
	encoded, err := s.encodeAll(items, now)
	if err != nil {
		return nil, err
	}
	err = s.upsertTx(ctx, encoded, deletes, func(ctx context.Context, tx *sql.Tx) error {
		if check != nil {
			if err := checkVersion(ctx, tx, *check); err != nil {
				return err
			}
		}
		if err := writeItems(ctx, tx, encoded, formatTime(now), s.counter.Encoding()); err != nil {
			return err
		}
		return checkSupersedes(ctx, tx, items)
	})
	if err != nil {
		if len(deletes) > 0 {
			return nil, fmt.Errorf("upserting %d items and deleting %d: %w", len(items), len(deletes), err)
		}
		return nil, fmt.Errorf("upserting %d items: %w", len(items), err)
	}
	ids := make([]string, len(items))
	for i := range items {
		ids[i] = items[i].ID
	}
	return ids, nil
}

// encodeAll encodes items on every CPU: counting tokens is most of an
// ingest's CPU time (BenchmarkHTTPIngest's profile), and items are
// independent. The error is that of the first bad item, as a serial loop
// would return.
func (s *Store) encodeAll(items []h4r.Item, now time.Time) ([]encodedItem, error) {
	encoded := make([]encodedItem, len(items))
	errs := make([]error, len(items))
	workers := min(runtime.GOMAXPROCS(0), (len(items)+encodeChunk-1)/encodeChunk)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(encodeChunk)) - encodeChunk
				if start >= len(items) {
					return
				}
				for i := start; i < min(start+encodeChunk, len(items)); i++ {
					encoded[i], errs[i] = s.encode(items[i], now, fmt.Sprintf("items[%d]", i))
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return encoded, nil
}

// encodeChunk is how many items an encoding worker takes at a time.
const encodeChunk = 32

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
	whole, err := json.Marshal(it)
	if err != nil {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field, "item cannot be encoded as JSON: %v", err)
	}
	if len(whole) > h4r.MaxItemBytes {
		return encodedItem{}, h4r.Errorf(h4r.EINVALID, field, "item is %d bytes as JSON, the limit is %d", len(whole), h4r.MaxItemBytes)
	}
	var content any
	if it.Content != nil {
		b, err := json.Marshal(it.Content)
		if err != nil {
			return encodedItem{}, h4r.Errorf(h4r.EINVALID, field+".content", "content cannot be encoded as JSON: %v", err)
		}
		content = string(b)
	}
	return encodedItem{
		item:      it,
		content:   content,
		metadata:  string(metadata),
		createdAt: formatTime(it.Metadata.CreatedAt),
		byteSize:  len(delivered),
		tokens:    s.counter.Count(string(delivered)),
	}, nil
}

// The statements of one upsert. On conflict the row is updated in place,
// not replaced, so that its seq (the full-text rowid), access count and the
// rows that reference it survive.
const (
	// A new id starts after the version it had when it was last deleted
	// (deleted_versions), so that no (id, version) is ever reused.
	upsertItemSQL = `INSERT INTO items (id, kind, text, content, metadata, created_at, updated_at, version, byte_size, tokens, token_encoding)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce((SELECT d.version FROM deleted_versions d WHERE d.id = ?1), 0) + 1, ?8, ?9, ?10)
		ON CONFLICT (id) DO UPDATE SET
			kind = excluded.kind, text = excluded.text, content = excluded.content,
			metadata = excluded.metadata, created_at = excluded.created_at, updated_at = excluded.updated_at,
			version = items.version + 1, byte_size = excluded.byte_size, tokens = excluded.tokens,
			token_encoding = excluded.token_encoding`
	deleteTagsSQL  = `DELETE FROM item_tags WHERE item_id IN (SELECT value FROM json_each(?))`
	insertTagsSQL  = `INSERT INTO item_tags (item_id, tag) VALUES `
	deleteLinksSQL = `DELETE FROM links WHERE source IN (SELECT value FROM json_each(?))`
	insertLinksSQL = `INSERT INTO links (source, position, target, type, strength, target_type, context) VALUES `
)

// writeItems writes items in tx: one upsert per item, in order (an id
// repeated in the batch goes up a version each time), then the tags and
// links of each id's last occurrence, which are what a write of each
// occurrence in turn would leave. Only the ids that were in the file
// before can hold old tags and links to clear; the rest are written in
// statements of many rows (TestWriteItemsEqualsOneByOne).
func writeItems(ctx context.Context, tx *sql.Tx, items []encodedItem, updatedAt, encoding string) (err error) {
	ids := make([]string, len(items))
	last := make(map[string]int, len(items)) // id → its last occurrence
	for i := range items {
		ids[i] = items[i].item.ID
		last[ids[i]] = i
	}
	existed, err := existingIDs(ctx, tx, ids)
	if err != nil {
		return err
	}
	upsert, err := tx.PrepareContext(ctx, upsertItemSQL)
	if err != nil {
		return fmt.Errorf("preparing the upsert: %w", err)
	}
	defer func() { err = errors.Join(err, upsert.Close()) }()
	for _, e := range items {
		it := &e.item
		if _, err := upsert.ExecContext(ctx, it.ID, it.Kind, it.Text, e.content, e.metadata, e.createdAt, updatedAt, e.byteSize, e.tokens, encoding); err != nil {
			return fmt.Errorf("writing item %q: %w", it.ID, err)
		}
	}
	if len(existed) > 0 {
		list, err := jsonList(existed)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, deleteTagsSQL, list); err != nil {
			return fmt.Errorf("clearing the tags of %d replaced items: %w", len(existed), err)
		}
		if _, err := tx.ExecContext(ctx, deleteLinksSQL, list); err != nil {
			return fmt.Errorf("clearing the links of %d replaced items: %w", len(existed), err)
		}
	}
	var tags, links []any
	for i := range items {
		it := &items[i].item
		if last[it.ID] != i {
			continue
		}
		for _, tag := range it.Metadata.Tags { // de-duplicated by Normalize
			tags = append(tags, it.ID, tag)
		}
		for pos, l := range it.Links {
			links = append(links, it.ID, pos, l.Target, l.Type, l.Strength, l.TargetType, l.Context)
		}
	}
	if err := insertRows(ctx, tx, insertTagsSQL, "", 2, tags); err != nil {
		return fmt.Errorf("writing the tags of %d items: %w", len(last), err)
	}
	if err := insertRows(ctx, tx, insertLinksSQL, "", 7, links); err != nil {
		return fmt.Errorf("writing the links of %d items: %w", len(last), err)
	}
	return nil
}

// existingIDs returns which of ids have a row in tx.
func existingIDs(ctx context.Context, tx *sql.Tx, ids []string) (_ []string, err error) {
	list, err := jsonList(ids)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT id FROM items WHERE id IN (SELECT value FROM json_each(?))`, list)
	if err != nil {
		return nil, fmt.Errorf("reading which items exist: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reading which items exist: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// insertRowsChunk is how many rows one multi-row statement holds: 128
// rows of links are 896 parameters, under SQLite's limit of 32,766.
const insertRowsChunk = 128

// insertRows runs the statement head + "(?, …), (?, …)" + tail over args,
// cols values a row, insertRowsChunk rows a statement: one statement
// instead of one a row, which is most of the cost of a small row.
func insertRows(ctx context.Context, tx *sql.Tx, head, tail string, cols int, args []any) (err error) {
	rows := len(args) / cols
	var full *sql.Stmt // the statement of a whole chunk, prepared once
	defer func() {
		if full != nil {
			err = errors.Join(err, full.Close())
		}
	}()
	for start := 0; start < rows; start += insertRowsChunk {
		n := min(insertRowsChunk, rows-start)
		chunk := args[start*cols : (start+n)*cols]
		if n < insertRowsChunk {
			if _, err := tx.ExecContext(ctx, valuesSQL(head, tail, cols, n), chunk...); err != nil {
				return err
			}
			continue
		}
		if full == nil {
			if full, err = tx.PrepareContext(ctx, valuesSQL(head, tail, cols, n)); err != nil {
				return err
			}
		}
		if _, err := full.ExecContext(ctx, chunk...); err != nil {
			return err
		}
	}
	return nil
}

// valuesSQL is head, n rows of cols placeholders, and tail.
func valuesSQL(head, tail string, cols, n int) string {
	row := "(" + strings.Repeat("?, ", cols-1) + "?)"
	var sb strings.Builder
	sb.Grow(len(head) + n*(len(row)+2) + len(tail))
	sb.WriteString(head)
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(row)
	}
	sb.WriteString(tail)
	return sb.String()
}

// writeTx runs fn in a transaction on the writer and commits it, or rolls
// it back when fn fails, within the write deadline (WithWriteTimeout):
// waiting for the writer, behind the writes before it, and fn's
// statements. fn must use the ctx it is given. A write the deadline ends is
// rolled back and fails with an unavailable *h4r.Error (writedeadline).
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	wctx, finish := sqlkit.WriteWithin(ctx, s.writeTimeout)
	return finish(s.runTx(wctx, fn))
}

// runTx is writeTx without a deadline of its own. The transaction is bound
// to ctx: when ctx ends first, database/sql rolls it back and the commit
// fails, so a write is whole or absent.
func (s *Store) runTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning a write: %w", withCause(ctx, err))
	}
	if err := fn(ctx, tx); err != nil {
		return errors.Join(withCause(ctx, err), rollback(tx))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing a write: %w", withCause(ctx, err))
	}
	return nil
}

// withCause adds why ctx ended to err when it did: SQLite reports a
// statement interrupted on a deadline as its own error, and database/sql a
// transaction rolled back on one as ErrTxDone.
func withCause(ctx context.Context, err error) error {
	if cause := ctx.Err(); cause != nil && !errors.Is(err, cause) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// readTx runs fn in a read transaction, so that the queries in it see one
// snapshot of the file (WAL lets it run beside the writer): the one ctx
// carries (Snapshot), or one of its own.
func (s *Store) readTx(ctx context.Context, fn func(*sql.Tx) error) error {
	if tx, ok := s.snapshotOf(ctx); ok {
		return fn(tx)
	}
	tx, end, err := s.beginRead(ctx)
	if err != nil {
		return err
	}
	return errors.Join(fn(tx), end())
}

// beginRead begins a read transaction with room for its counters
// (readCounter); end forgets them and rolls it back, a read having nothing
// to commit.
func (s *Store) beginRead(ctx context.Context) (_ *sql.Tx, end func() error, _ error) {
	tx, err := s.readers.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, fmt.Errorf("beginning a read: %w", err)
	}
	s.txCounters.Store(tx, &txCounters{})
	return tx, func() error {
		s.txCounters.Delete(tx)
		return rollback(tx)
	}, nil
}

// Get returns the item with the given id, with its links and the
// store-maintained metadata. It returns an *h4r.Error with code not_found
// when there is none.
func (s *Store) Get(ctx context.Context, id string) (*h4r.Item, error) {
	if id == "" {
		return nil, h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	var items []*h4r.Item
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		items, err = queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id = ?`, []any{id}, nil)
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

// Delete removes the item with the given id, its tags and the links it
// holds. Links other items hold to it stay, as links to an item not yet
// ingested do. It returns an *h4r.Error with code not_found when there is
// no such item.
func (s *Store) Delete(ctx context.Context, id string) error {
	if id == "" {
		return h4r.Errorf(h4r.EINVALID, "id", "item id is required")
	}
	var n int64
	err := s.deleteTx(ctx, id, func(ctx context.Context, tx *sql.Tx) error {
		// Keep the last version, so that the id written again goes on from it.
		if _, err := tx.ExecContext(ctx, `INSERT INTO deleted_versions (id, version)
			SELECT id, version FROM items WHERE id = ?1
			ON CONFLICT (id) DO UPDATE SET version = excluded.version`, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM items WHERE id = ?`, id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting item %q: %w", id, err)
	}
	if n == 0 {
		return h4r.Errorf(h4r.ENOTFOUND, "id", "no item with id %q", id)
	}
	return nil
}

// Count returns the number of items in the store.
func (s *Store) Count(ctx context.Context) (int, error) {
	return countItems(ctx, s.readers)
}

// countItems counts the items as q sees them: the readers' pool, or a
// read transaction's snapshot.
func countItems(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM items`).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting items: %w", err)
	}
	return n, nil
}

// itemColumns are the columns queryItems decodes, from the items table
// aliased as i.
const itemColumns = `i.id, i.kind, i.text, i.content, i.metadata, i.updated_at, i.version,
	i.access_count, i.last_accessed_at, i.byte_size, i.tokens`

// queryItems runs query, whose first columns are itemColumns, and returns
// the items with their links. When the query selects more columns, extra
// returns the destinations to scan them into for the row being read.
func queryItems(ctx context.Context, tx *sql.Tx, query string, args []any, extra func() []any) ([]*h4r.Item, error) {
	items, err := queryItemRows(ctx, tx, query, args, extra)
	if err != nil {
		return nil, err
	}
	if err := loadLinks(ctx, tx, items); err != nil {
		return nil, err
	}
	return items, nil
}

// queryItemRows is queryItems without the links.
func queryItemRows(ctx context.Context, tx *sql.Tx, query string, args []any, extra func() []any) (items []*h4r.Item, err error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("querying items: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		var (
			it                        h4r.Item
			content                   sql.NullString
			metadata, updatedAt       string
			lastAccessedAt            sql.NullString
			version, byteSize, tokens int
			accessCount               int64
		)
		dest := []any{&it.ID, &it.Kind, &it.Text, &content, &metadata, &updatedAt, &version,
			&accessCount, &lastAccessedAt, &byteSize, &tokens}
		if extra != nil {
			dest = append(dest, extra()...)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("reading an item row: %w", err)
		}
		if content.Valid {
			if err := json.Unmarshal([]byte(content.String), &it.Content); err != nil {
				return nil, fmt.Errorf("decoding the content of item %q: %w", it.ID, err)
			}
		}
		if err := json.Unmarshal([]byte(metadata), &it.Metadata); err != nil {
			return nil, fmt.Errorf("decoding the metadata of item %q: %w", it.ID, err)
		}
		m := &it.Metadata
		m.Version, m.AccessCount, m.ByteSize, m.Tokens = version, accessCount, byteSize, tokens
		if m.UpdatedAt, err = parseTime(updatedAt); err != nil {
			return nil, fmt.Errorf("decoding updated_at of item %q: %w", it.ID, err)
		}
		m.LastAccessedAt = time.Time{}
		if lastAccessedAt.Valid {
			if m.LastAccessedAt, err = parseTime(lastAccessedAt.String); err != nil {
				return nil, fmt.Errorf("decoding last_accessed_at of item %q: %w", it.ID, err)
			}
		}
		items = append(items, &it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading item rows: %w", err)
	}
	return items, nil
}

// loadLinks fills in the links items hold, in the order they were given.
func loadLinks(ctx context.Context, tx *sql.Tx, items []*h4r.Item) (err error) {
	if len(items) == 0 {
		return nil
	}
	byID := make(map[string]*h4r.Item, len(items))
	ids := make([]string, 0, len(items))
	for _, it := range items {
		byID[it.ID] = it
		ids = append(ids, it.ID)
	}
	idList, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("encoding item ids: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT source, target, type, strength, target_type, context FROM links
		WHERE source IN (SELECT value FROM json_each(?)) ORDER BY source, position`, string(idList))
	if err != nil {
		return fmt.Errorf("querying links: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	for rows.Next() {
		var source string
		var l h4r.Link
		if err := rows.Scan(&source, &l.Target, &l.Type, &l.Strength, &l.TargetType, &l.Context); err != nil {
			return fmt.Errorf("reading a link row: %w", err)
		}
		if it := byID[source]; it != nil {
			it.Links = append(it.Links, l)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading link rows: %w", err)
	}
	return nil
}

// eachPage is how many items Each reads per query.
const eachPage = 500

// Each calls fn for every item, in id order, reading them a page at a time
// so that a large store is never held in memory. It stops at fn's first
// error and returns it. Items written while Each runs may or may not be
// visited. Rebuilding a derived index (vectors, a graph mirror) uses it.
func (s *Store) Each(ctx context.Context, fn func(*h4r.Item) error) error {
	after := ""
	for {
		var page []*h4r.Item
		err := s.readTx(ctx, func(tx *sql.Tx) error {
			var err error
			page, err = queryItems(ctx, tx, `SELECT `+itemColumns+` FROM items i WHERE i.id > ? ORDER BY i.id LIMIT ?`, []any{after, eachPage}, nil)
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
// the version check expects. The store has one writer at a time, so
// nothing can change the item between this read and the write after it.
func checkVersion(ctx context.Context, tx *sql.Tx, check h4r.VersionCheck) error {
	var v int
	err := tx.QueryRowContext(ctx, `SELECT version FROM items WHERE id = ?`, check.ID).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the version of %q: %w", check.ID, err)
	}
	if v != check.Version {
		return fmt.Errorf("item %q is at version %d, the write expected %d: %w", check.ID, v, check.Version, h4r.ErrVersionConflict)
	}
	return nil
}
