package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/h4r/h4r"
)

const defaultFullTextLimit = 100

// fullText is the full-text generator: BM25 over the postings table.
type fullText struct{ s *Store }

func (fullText) Name() string { return h4r.GenFullText }

// queryTermsSQL gives the query's lexemes the corpus knows, each with its
// idf times its query-term frequency: $1 holds each query word as many
// times as the query asks it, and a lexeme's positions in the query's
// tsvector count how often it was asked (two words with one stem count
// twice, as FTS5's porter tokenizer sees them).
const queryTermsSQL = `
		SELECT t.id, cardinality(v.positions) * ln(1 + (s.n_docs - d.df + 0.5)::float8 / (d.df + 0.5)) AS idf
		FROM unnest(to_tsvector('` + textConfig + `', $1)) v
		JOIN terms t ON t.term = v.lexeme
		CROSS JOIN LATERAL (SELECT sum(df)::bigint AS df FROM term_df WHERE term_id = t.id) d
		CROSS JOIN (SELECT sum(n_docs)::bigint AS n_docs FROM stats_shards) s
		WHERE d.df > 0
	`

// bm25SQL scores items for the query's lexemes. q holds the query terms the
// corpus knows, with their idf, computed once per term in float8 (in
// numeric, and recomputed per posting as an inlined CTE would, the sum was
// most of a query's time). For each of them the lateral subquery reads
// at most the term cut of postings, best impact first, from the
// (term_id, impact DESC, item_seq) index alone; the sum of idf·impact per
// item is its BM25 score. The best hits are kept with their ties, and only
// they are joined to their rows; the ties at the cut are broken by id (in
// bytes, as Go compares strings) there, so that only the limit's rows are
// read out: on a templated corpus a cut of 100 kept ~1,000 ties.
// %[1]s is the posting source: the postings table, or postings joined to
// the items that pass the filters; %[2]s the columns read of each hit's
// row (hitSelect).
const bm25SQL = `WITH q AS MATERIALIZED (` + queryTermsSQL + `),
	hits AS (
		SELECT p.item_seq, sum(q.idf * p.impact) AS score
		FROM q CROSS JOIN LATERAL (
			%[1]s
		) p
		GROUP BY p.item_seq
		ORDER BY score DESC
		FETCH FIRST $3 ROWS WITH TIES
	)
	SELECT %[2]s, h.score
	FROM hits h JOIN items i ON i.seq = h.item_seq
	ORDER BY h.score DESC, i.id COLLATE "C"
	LIMIT $3`

const (
	plainPostings = `SELECT item_seq, impact FROM postings WHERE term_id = q.id ORDER BY impact DESC LIMIT $2`
	// filteredPostings applies the cut to the postings of items that pass
	// the filters, so that a selective filter still finds its best items;
	// it reads every posting of a common term, so it is the fallback.
	filteredPostings = `SELECT ps.item_seq, ps.impact FROM postings ps JOIN items i ON i.seq = ps.item_seq
			WHERE ps.term_id = q.id%s ORDER BY ps.impact DESC LIMIT $2`
)

// postFilterSQL scores like bm25SQL, then walks the candidates best first
// and keeps the first that pass the filters (%s): one row lookup per
// candidate walked, stopping at the limit (the lateral join keeps the
// walk in score order; a plain join read every candidate's row), instead
// of one per posting. It misses items whose postings all fell below the cut, so
// when it finds fewer than the limit and a term was cut, Generate asks
// again with filteredPostings. %[1]s is the filters, %[2]s the columns
// read of each hit's row.
const postFilterSQL = `WITH q AS MATERIALIZED (` + queryTermsSQL + `),
	hits AS (
		SELECT p.item_seq, sum(q.idf * p.impact) AS score
		FROM q CROSS JOIN LATERAL (` + plainPostings + `) p
		GROUP BY p.item_seq
	),
	top AS (
		SELECT h.item_seq, h.score FROM (SELECT item_seq, score FROM hits ORDER BY score DESC) h
		CROSS JOIN LATERAL (SELECT FROM items i WHERE i.seq = h.item_seq%[1]s) pass
		ORDER BY h.score DESC
		FETCH FIRST $3 ROWS WITH TIES
	)
	SELECT %[2]s, t.score
	FROM top t JOIN items i ON i.seq = t.item_seq
	ORDER BY t.score DESC, i.id COLLATE "C"
	LIMIT $3`

// cutSQL tells whether any query term has more postings than the cut.
const cutSQL = `SELECT EXISTS (SELECT 1 FROM terms t
	WHERE t.term = ANY(tsvector_to_array(to_tsvector('` + textConfig + `', $1)))
	AND (SELECT sum(df) FROM term_df WHERE term_id = t.id) > $2)`

// Generate finds the items whose text holds any word of q.Text, scored by
// BM25 (higher is better). Stop words are dropped (the store's analyzer,
// then Postgres's english configuration), words stemmed, and a word asked
// twice counts twice. Text without words finds nothing.
func (g fullText) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, err := h4r.HitLimit(q.Limit, defaultFullTextLimit)
	if err != nil {
		return nil, err
	}
	text := queryText(g.s.analyzer.Terms(q.Text))
	p := &params{}
	p.add(text)
	p.add(g.s.termCut)
	p.add(limit)
	where, err := whereFilters(q.Filters, p)
	if err != nil {
		return nil, err
	}
	if text == "" {
		return nil, nil
	}
	cols := g.hitSelect()
	query := fmt.Sprintf(bm25SQL, plainPostings, cols)
	if where != "" {
		query = fmt.Sprintf(postFilterSQL, where, cols)
	}
	hits, err := g.run(ctx, query, p.args)
	if err == nil && where != "" && len(hits) < limit {
		var cut bool
		err = g.s.read(ctx, func(ctx context.Context) error {
			return g.s.pool.QueryRow(ctx, cutSQL, text, g.s.termCut).Scan(&cut)
		})
		if err == nil && cut {
			hits, err = g.run(ctx, fmt.Sprintf(bm25SQL, fmt.Sprintf(filteredPostings, where), cols), p.args)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("full-text search for %q: %w", q.Text, err)
	}
	// Best first, ties by id, as the query ordered them (the sort keeps
	// the order exact whatever the database's collation).
	slices.SortFunc(hits, func(a, b h4r.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Item.ID, b.Item.ID)
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, nil
}

// hitSelect is what a scoring query reads of each hit's row: its stamp
// when the item cache is on (runCached), else the whole item.
func (g fullText) hitSelect() string {
	if g.s.items.Enabled() {
		return stampColumns
	}
	return itemColumns
}

// run runs one scoring query and returns its hits.
func (g fullText) run(ctx context.Context, query string, args []any) ([]h4r.Hit, error) {
	if g.s.items.Enabled() {
		return g.runCached(ctx, query, args)
	}
	var hits []h4r.Hit
	err := g.s.read(ctx, func(ctx context.Context) error {
		var scores []*float64
		items, err := g.s.queryItems(ctx, query, args, func() []any {
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
	return hits, err
}

// runCached runs one scoring query that reads the hits' stamps and returns
// the hits with their items read through the cache.
func (g fullText) runCached(ctx context.Context, query string, args []any) ([]h4r.Hit, error) {
	var hits []h4r.Hit
	err := g.s.read(ctx, func(ctx context.Context) error {
		hits = hits[:0]
		rows, err := g.s.pool.Query(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("querying hits: %w", err)
		}
		var (
			sc      stampScanner
			score   float64
			stamps  []stamped
			scores  []float64
			dest    = append(sc.dest(), &score)
			scanErr error
		)
		for rows.Next() {
			if scanErr = rows.Scan(dest...); scanErr != nil {
				break
			}
			stamps = append(stamps, sc.value())
			scores = append(scores, score)
		}
		rows.Close()
		if err := errors.Join(scanErr, rows.Err()); err != nil {
			return fmt.Errorf("reading hits: %w", err)
		}
		items, err := g.s.readThrough(ctx, g.s.pool, stamps)
		if err != nil {
			return err
		}
		for i, r := range stamps {
			if it := items[r.id]; it != nil {
				hits = append(hits, h4r.Hit{Item: it, Score: scores[i]})
			}
		}
		return nil
	})
	return hits, err
}
