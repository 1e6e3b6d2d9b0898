package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/index/bm25"
)

const defaultFullTextLimit = 100

// fullText is the full-text generator: BM25 over items.text, from the
// in-memory index (textindex.go).
type fullText struct{ s *Store }

func (fullText) Name() string { return h4r.GenFullText }

// filterGrowth: a filtered search checks the best limit×4 hits against the
// filters, then ×16, ×64; past that (a filter few matching items pass) it
// reads the rows that pass and hands the index an accept test, which
// returns the same hits (the top k of the accepted items) at the cost of
// reading every passing row id.
const (
	textFilterGrowth        = 4
	defaultTextFilterRounds = 3
)

// Generate finds the items whose text holds any word of q.Text: the exact
// BM25 top limit (k1 1.2, b 0.75, Lucene's idf), best first, ties by item
// id; a hit's Score is its BM25 score. The query is analysed as package
// analysis says (the store's stop words left out, a word asked twice
// counting twice), then each word is folded and stemmed as the index's
// documents are (index/bm25). Text without words finds nothing.
func (g fullText) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	limit, err := h4r.HitLimit(q.Limit, defaultFullTextLimit)
	if err != nil {
		return nil, err
	}
	where, filterArgs, err := whereFilters(q.Filters)
	if err != nil {
		return nil, err
	}
	terms := bm25.Query(g.s.analyzer.Terms(q.Text))
	if len(terms) == 0 {
		return nil, nil
	}
	var hits []h4r.Hit
	err = g.s.readTx(ctx, func(tx *sql.Tx) error {
		gen, err := g.s.readCounter(ctx, tx, textCounter)
		if err != nil {
			return err
		}
		if err := g.s.ensureText(ctx, tx, gen); err != nil {
			return err
		}
		var ranked []rankedText
		if where == "" {
			ranked, err = g.s.text.search(ctx, terms, limit, nil)
		} else {
			ranked, err = g.filtered(ctx, tx, terms, limit, q.Filters, where, filterArgs)
		}
		if err != nil {
			return err
		}
		hits, err = g.s.readTextHits(ctx, tx, ranked)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("full-text search for %q: %w", q.Text, err)
	}
	return hits, nil
}

// filtered returns the top limit of the items that pass the filter
// conditions where (SQL on items i). The index's ranking is a strict order
// (score, then id), so the passing items of its top k, in order, are the
// first of the passing items' ranking: when k holds limit of them, or all
// the matches, they are the answer. Else k grows; after textFilterRounds
// the passing rows are read and the index searched among them.
func (g fullText) filtered(ctx context.Context, tx *sql.Tx, terms map[string]int, limit int, f h4r.Filters, where string, args []any) ([]rankedText, error) {
	done := 0
	var kept []rankedText
	k := limit
	mem := memFilterOf(f) // nil: the filters are checked with SQL
	for range g.s.textFilterRounds {
		k *= textFilterGrowth
		ranked, err := g.s.text.search(ctx, terms, k, nil)
		if err != nil {
			return nil, err
		}
		if done < len(ranked) {
			pass, err := g.s.passingRanked(ctx, tx, mem, ranked[done:], where, args)
			if err != nil {
				return nil, err
			}
			for _, r := range ranked[done:] {
				if pass[r.seq] {
					kept = append(kept, r)
					if len(kept) == limit {
						return kept, nil
					}
				}
			}
			done = len(ranked)
		}
		if len(ranked) < k { // every match was checked
			return kept, nil
		}
	}
	pass, err := passingSeqs(ctx, tx, where, args)
	if err != nil {
		return nil, err
	}
	return g.s.text.search(ctx, terms, limit, func(seq uint32) bool { return pass[seq] })
}

// passingRows returns which of the rows seqs pass the filter conditions
// where: lookups by rowid (by seq rather than by id, which would go through
// the id index first).
func passingRows(ctx context.Context, tx *sql.Tx, seqs []uint32, where string, args []any) (_ map[uint32]bool, err error) {
	list, err := json.Marshal(seqs)
	if err != nil {
		return nil, fmt.Errorf("encoding row ids: %w", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT i.seq FROM items i WHERE i.seq IN (SELECT value FROM json_each(?))`+where,
		append([]any{string(list)}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("applying filters: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	pass := make(map[uint32]bool, len(seqs))
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, fmt.Errorf("reading a filtered row: %w", err)
		}
		if doc, err := seqOf(seq); err == nil {
			pass[doc] = true
		}
	}
	return pass, rows.Err()
}

// passingSeqs returns the rows of the items that pass the filter
// conditions where.
func passingSeqs(ctx context.Context, tx *sql.Tx, where string, args []any) (_ map[uint32]bool, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT i.seq FROM items i WHERE 1`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("applying filters: %w", err)
	}
	defer func() { err = errors.Join(err, rows.Close()) }()
	pass := map[uint32]bool{}
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, fmt.Errorf("reading a filtered row: %w", err)
		}
		if doc, err := seqOf(seq); err == nil {
			pass[doc] = true
		}
	}
	return pass, rows.Err()
}

// readTextHits reads the items of the ranked hits, keeping their order. A
// hit whose row tx does not see as it was indexed (written or deleted
// since tx's snapshot began, after the index took the write) is left out.
func (s *Store) readTextHits(ctx context.Context, tx *sql.Tx, ranked []rankedText) ([]h4r.Hit, error) {
	if len(ranked) == 0 {
		return nil, nil
	}
	ids := make([]string, len(ranked))
	for i, r := range ranked {
		ids[i] = r.id
	}
	byID, err := s.readItems(ctx, tx, ids)
	if err != nil {
		return nil, err
	}
	hits := make([]h4r.Hit, 0, len(ranked))
	for _, r := range ranked {
		if it := byID[r.id]; it != nil {
			hits = append(hits, h4r.Hit{Item: it, Score: r.score})
		}
	}
	return hits, nil
}

// MatchExpression turns natural-language text into an FTS5 MATCH expression
// that matches any of its words, keeping every word (the generator also
// drops the store's stop words): see matchTerms.
func MatchExpression(text string) string {
	return matchTerms(new(analysis.Analyzer).Terms(text))
}

// matchTerms turns query terms into an FTS5 MATCH expression: each term
// quoted as an FTS5 string, written as many times as the query asks it,
// joined with OR. bm25() sums over the expression's phrases, so a term
// written twice weighs twice: query-term frequency
// (TestMatchRepeatedTermCountsTwice). Whatever the text held (quotes,
// column filters, *, ^, NEAR, AND/OR/NOT) ends up inside a quoted string,
// so the expression never has an FTS5 syntax error. It returns "" when
// there are no terms.
func matchTerms(terms []analysis.Term) string {
	var sb strings.Builder
	for _, t := range terms {
		for range t.Count {
			if sb.Len() > 0 {
				sb.WriteString(" OR ")
			}
			// An FTS5 string is double-quoted, with an inner quote doubled.
			// Terms hold no quotes, but quoting by the rule keeps that safe
			// to change.
			sb.WriteByte('"')
			sb.WriteString(strings.ReplaceAll(t.Word, `"`, `""`))
			sb.WriteByte('"')
		}
	}
	return sb.String()
}
