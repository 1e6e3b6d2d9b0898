package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/h4r/h4r"
)

// fullTextFTS5 is the full-text generator the store had before the
// in-memory index: FTS5 over items.text, ranked by FTS5's bm25() of every
// match. The service does not use it; it stays as the baseline the index
// is measured and checked against (sources/bm25/PERFORMANCE.md), while the
// items_fts table is still kept (migration 0001).
type fullTextFTS5 struct{ s *Store }

func (fullTextFTS5) Name() string { return h4r.GenFullText }

// FullTextFTS5 returns the FTS5 generator, the baseline of the benchmarks.
func (s *Store) FullTextFTS5() h4r.Generator { return fullTextFTS5{s} }

// Generate finds the items whose text contains any word of q.Text. A hit's
// Score is −bm25, so higher is better; an item that matches more of the
// words, or rarer ones, scores higher. Text without words finds nothing.
func (g fullTextFTS5) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, err := h4r.HitLimit(q.Limit, defaultFullTextLimit)
	if err != nil {
		return nil, err
	}
	where, filterArgs, err := whereFilters(q.Filters)
	if err != nil {
		return nil, err
	}
	match := matchTerms(g.s.analyzer.Terms(q.Text))
	if match == "" {
		return nil, nil
	}
	// rank is FTS5's name for bm25() here, computed once per match. Without
	// filters the top hits are chosen from the index alone and only they are
	// joined to their rows: a common word matches most items, and reading
	// every matching row before cutting to the limit cost ~30% more
	// (BenchmarkFullText, benchstat). "ORDER BY rank, rowid" matters: plain
	// "ORDER BY rank" takes FTS5's own sort and gained nothing. With filters
	// the rows must be read to be tested, so they are joined first (a
	// rowid IN (…) filter on the index scan was ~100× slower).
	query := `SELECT ` + itemColumns + `, -f.rank
		FROM items_fts f JOIN items i ON i.seq = f.rowid
		WHERE f.items_fts MATCH ?` + where + `
		ORDER BY f.rank, i.id
		LIMIT ?`
	if where == "" {
		query = `SELECT ` + itemColumns + `, -h.rank
		FROM (SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? ORDER BY rank, rowid LIMIT ?) h
		JOIN items i ON i.seq = h.rowid
		ORDER BY h.rank, i.id`
	}
	args := append(append([]any{match}, filterArgs...), limit)

	var hits []h4r.Hit
	err = g.s.readTx(ctx, func(tx *sql.Tx) error {
		var scores []*float64
		items, err := queryItems(ctx, tx, query, args, func() []any {
			scores = append(scores, new(float64))
			return []any{scores[len(scores)-1]}
		})
		if err != nil {
			return err
		}
		hits = make([]h4r.Hit, len(items))
		for i, it := range items {
			hits[i] = h4r.Hit{Item: it, Score: *scores[i]}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("full-text search for %q: %w", q.Text, err)
	}
	return hits, nil
}
