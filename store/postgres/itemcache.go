package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/index/itemcache"
)

// DefaultItemCacheBytes is the memory the decoded-item cache may take by
// default (WithItemCacheBytes), as the embedded store's: 256 MiB holds
// every item of a 10,000-item store many times over.
const DefaultItemCacheBytes = 256 << 20

// WithItemCacheBytes bounds the memory of the cache of decoded items that
// the full-text, vector and hop generators read their hits through
// (default DefaultItemCacheBytes; 0 turns it off: every hit is read and
// decoded from its row on every search). The bound is on an estimate of
// each item's memory (itemcache.Footprint). PERFORMANCE.md says why the
// cache is never stale, across replicas too.
func WithItemCacheBytes(n int64) Option { return func(o *options) { o.itemCacheBytes = &n } }

// stampColumns are what a search reads of each hit's row when the cache is
// on: its id and its stamp (itemcache.Stamp), in the statement that finds
// the hit, so that a hit is the row as it is in that statement's snapshot
// whether its item comes from the cache or from the row.
const stampColumns = `i.id, i.version, i.access_count, i.last_accessed_at, i.byte_size, i.tokens`

// stamped is a hit's row as stampColumns read it.
type stamped struct {
	id    string
	stamp itemcache.Stamp
}

// stampScanner scans stampColumns into a stamped, row after row.
type stampScanner struct {
	row                       stamped
	version, byteSize, tokens int32
	lastAccessedAt            *time.Time
}

// dest returns the destinations of stampColumns.
func (sc *stampScanner) dest() []any {
	return []any{&sc.row.id, &sc.version, &sc.row.stamp.AccessCount, &sc.lastAccessedAt, &sc.byteSize, &sc.tokens}
}

// value returns the row scanned last.
func (sc *stampScanner) value() stamped {
	r := sc.row
	r.stamp.Version, r.stamp.ByteSize, r.stamp.Tokens = int(sc.version), int(sc.byteSize), int(sc.tokens)
	r.stamp.LastAccessedAt = time.Time{}
	if sc.lastAccessedAt != nil {
		r.stamp.LastAccessedAt = sc.lastAccessedAt.UTC()
	}
	return r
}

// readThrough returns the items of rows by id: the cache's entry when it
// was decoded from a row with the stamp the row has now (a copy with the
// row's access counts when only they moved), the rest read on q and
// decoded (and kept). An item deleted since its row was stamped is
// absent. One read on q may see a later state than the stamps did; it is
// never an earlier one, so nothing older than the stamps is returned.
func (s *Store) readThrough(ctx context.Context, q querier, rows []stamped) (map[string]*h4r.Item, error) {
	out := make(map[string]*h4r.Item, len(rows))
	var missing []string
	var letGo map[string]bool // missed, not to be kept (a selective cache's first misses)
	for _, r := range rows {
		it, ok, keep := s.items.Get(r.id, r.stamp)
		switch {
		case ok:
			out[r.id] = it
		case keep:
			missing = append(missing, r.id)
		default:
			missing = append(missing, r.id)
			if letGo == nil {
				letGo = map[string]bool{}
			}
			letGo[r.id] = true
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	items, err := queryItemsOn(ctx, q, `SELECT `+itemColumns+` FROM items i WHERE i.id = ANY($1)`, []any{missing}, nil)
	if err != nil {
		return nil, fmt.Errorf("reading %d items missing from the cache: %w", len(missing), err)
	}
	for _, it := range items {
		out[it.ID] = it
		if !letGo[it.ID] {
			s.items.Put(it)
		}
	}
	return out, nil
}

// readByID returns the items with the given ids by id (an id without an
// item is absent): through the cache when it is on, by their stamps read
// in one query, else read and decoded.
func (s *Store) readByID(ctx context.Context, ids []string) (map[string]*h4r.Item, error) {
	var out map[string]*h4r.Item
	err := s.read(ctx, func(ctx context.Context) error {
		if !s.items.Enabled() {
			items, err := s.queryItems(ctx, `SELECT `+itemColumns+` FROM items i WHERE i.id = ANY($1)`, []any{ids}, nil)
			if err != nil {
				return err
			}
			out = make(map[string]*h4r.Item, len(items))
			for _, it := range items {
				out[it.ID] = it
			}
			return nil
		}
		stamps, err := readStamps(ctx, s.pool, `SELECT `+stampColumns+` FROM items i WHERE i.id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		out, err = s.readThrough(ctx, s.pool, stamps)
		return err
	})
	return out, err
}

// readStamps runs query, selecting stampColumns, on q.
func readStamps(ctx context.Context, q querier, query string, args ...any) ([]stamped, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("querying item stamps: %w", err)
	}
	var sc stampScanner
	var out []stamped
	if _, err := pgx.ForEachRow(rows, sc.dest(), func() error { out = append(out, sc.value()); return nil }); err != nil {
		return nil, fmt.Errorf("reading item stamps: %w", err)
	}
	return out, nil
}
