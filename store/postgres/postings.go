package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
)

// The upkeep of the BM25 postings: term analysis of written items, the
// corpus statistics (the write lock), postings with precomputed impacts,
// and their refresh when the average length drifts. The write path
// (items.go) calls it inside its transaction.

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
// holds the write lock while it runs, bounded by ctx only: it is
// maintenance, as long as the store is large, not a write the write
// timeout bounds.
func (s *Store) RefreshImpacts(ctx context.Context) error {
	return s.writeTxWithin(ctx, 0, func(ctx context.Context, tx pgx.Tx) error {
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
