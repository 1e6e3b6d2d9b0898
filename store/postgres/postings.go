package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

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

// statShards is how many rows the corpus statistics are kept in
// (migration 0009): more than writers that run at once, so that a write
// finds one free.
const statShards = 16

// The statistics lock orders writes with the recomputation of impacts:
// writes hold it shared, so that the reference length their impacts use
// stays as they read it until they commit; a refresh (and a write to an
// empty corpus, which sets the reference) holds it alone. The vector lock
// orders the writes that touch item vectors, so that vseq values commit
// in order (migration 0006). Both are per schema.
const (
	statsLockSQL         = `SELECT pg_advisory_xact_lock_shared(hashtextextended(current_schema(), 7152))`
	statsLockAloneSQL    = `SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), 7152))`
	statsTryLockAloneSQL = `SELECT pg_try_advisory_xact_lock(hashtextextended(current_schema(), 7152))`
	vectorLockSQL        = `SELECT pg_advisory_xact_lock(hashtextextended(current_schema(), 7153))`
	corpusStatsSQL       = `SELECT coalesce(sum(n_docs), 0)::bigint, coalesce(sum(total_len), 0)::bigint FROM stats_shards`
	corpusStatsRefSQL    = `SELECT s.n_docs, s.total_len, c.avgdl_ref FROM (` + corpusStatsSQL + `) s (n_docs, total_len), corpus_stats c`
)

// corpusStats is a write's view of the corpus statistics: the committed
// shards when it began plus its own changes, the shard it holds, and the
// changes it adds to that shard when it ends.
type corpusStats struct {
	nDocs, totalLen int64
	avgdlRef        float64
	alone           bool // holds the statistics lock alone
	refChanged      bool
	shard           int16
	dDocs, dLen     int64
}

func (c corpusStats) avgdl() float64 {
	if c.nDocs == 0 {
		return 0
	}
	return float64(c.totalLen) / float64(c.nDocs)
}

// add counts an item of length dl in (n = 1) or out (n = -1).
func (c *corpusStats) add(n, dl int64) {
	c.nDocs += n
	c.totalLen += n * dl
	c.dDocs += n
	c.dLen += n * dl
}

// lockStats begins a write's part in the statistics: it takes the
// statistics lock (alone when alone is set or the corpus has no reference
// length yet, shared otherwise), the vector lock when the write may touch
// vectors, and claims a shard no other write holds (or waits for one when
// all are held), then reads the statistics. Locks are taken in this order by every write,
// before any row lock.
func lockStats(ctx context.Context, tx pgx.Tx, alone, vectors bool) (*corpusStats, error) {
	if !alone {
		var ref float64
		if err := tx.QueryRow(ctx, `SELECT avgdl_ref FROM corpus_stats`).Scan(&ref); err != nil {
			return nil, fmt.Errorf("reading the reference length: %w", err)
		}
		alone = ref <= 0
	}
	lock := statsLockSQL
	if alone {
		lock = statsLockAloneSQL
	}
	if _, err := tx.Exec(ctx, lock); err != nil {
		return nil, fmt.Errorf("taking the statistics lock: %w", err)
	}
	if vectors {
		if _, err := tx.Exec(ctx, vectorLockSQL); err != nil {
			return nil, fmt.Errorf("taking the vector lock: %w", err)
		}
	}
	c := &corpusStats{alone: alone}
	err := tx.QueryRow(ctx, `SELECT shard FROM stats_shards ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED`).Scan(&c.shard)
	if errors.Is(err, pgx.ErrNoRows) { // every shard held: wait for one
		err = tx.QueryRow(ctx, `SELECT shard FROM stats_shards WHERE shard = floor(random() * $1)::int FOR UPDATE`, statShards).Scan(&c.shard)
	}
	if err != nil {
		return nil, fmt.Errorf("claiming a statistics shard: %w", err)
	}
	if err := tx.QueryRow(ctx, corpusStatsRefSQL).Scan(&c.nDocs, &c.totalLen, &c.avgdlRef); err != nil {
		return nil, fmt.Errorf("reading the corpus statistics: %w", err)
	}
	return c, nil
}

// save adds the write's changes to its shard, and the reference length
// when the write set it.
func (c *corpusStats) save(ctx context.Context, tx pgx.Tx) error {
	if c.dDocs != 0 || c.dLen != 0 {
		if _, err := tx.Exec(ctx, `UPDATE stats_shards SET n_docs = n_docs + $2, total_len = total_len + $3 WHERE shard = $1`,
			c.shard, c.dDocs, c.dLen); err != nil {
			return fmt.Errorf("updating the corpus statistics: %w", err)
		}
		c.dDocs, c.dLen = 0, 0
	}
	if c.refChanged {
		if _, err := tx.Exec(ctx, `UPDATE corpus_stats SET avgdl_ref = $1`, c.avgdlRef); err != nil {
			return fmt.Errorf("updating the reference length: %w", err)
		}
		c.refChanged = false
	}
	return nil
}

// removePostings deletes the postings of the items with these seqs and
// lowers the df of their terms in the write's shard.
func removePostings(ctx context.Context, tx pgx.Tx, seqs []int64, shard int16) error {
	if len(seqs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM postings WHERE item_seq = ANY($1) RETURNING term_id)
		INSERT INTO term_df (term_id, shard, df) SELECT term_id, $2, -count(*) FROM gone GROUP BY term_id ORDER BY term_id
		ON CONFLICT (term_id, shard) DO UPDATE SET df = term_df.df + excluded.df`, seqs, shard)
	if err != nil {
		return fmt.Errorf("removing old postings: %w", err)
	}
	return nil
}

// writePostings adds the items' postings with impacts, their terms being
// in the dictionary already (addTerms), and their counts to df in the
// write's shard. Impacts use the reference average
// length, so that all postings stay comparable; when the corpus is small
// and its average has drifted, every impact is recomputed here.
func (s *Store) writePostings(ctx context.Context, tx pgx.Tx, items []encodedItem, seqByID map[string]int64, termID map[string]int32, stats *corpusStats) error {
	avg := stats.avgdl()
	switch {
	case stats.avgdlRef <= 0:
		stats.avgdlRef, stats.refChanged = avg, true
	case stats.alone && stats.nDocs <= refreshLimit && drifted(stats.avgdlRef, avg):
		stats.avgdlRef, stats.refChanged = avg, true
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
	terms := slices.Sorted(maps.Keys(distinct))
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
	if _, err := tx.Exec(ctx, `INSERT INTO term_df (term_id, shard, df) SELECT u.id, $3, u.n FROM unnest($1::int[], $2::int[]) AS u (id, n) ORDER BY u.id
		ON CONFLICT (term_id, shard) DO UPDATE SET df = term_df.df + excluded.df`, ids, counts, stats.shard); err != nil {
		return fmt.Errorf("counting terms: %w", err)
	}
	return nil
}

// addTerms adds the terms of items to the dictionary in a transaction of
// its own, before the write's, and returns their ids. Writers adding the
// same new term wait for each other only for this short transaction, not
// until the other's write commits; a term whose write then fails stays in
// the dictionary with no postings (df 0), as harmless as a term whose
// items were deleted.
func (s *Store) addTerms(ctx context.Context, items []encodedItem) (map[string]int32, error) {
	set := map[string]bool{}
	for _, e := range items {
		for _, t := range e.terms {
			set[t] = true
		}
	}
	if len(set) == 0 {
		return nil, nil
	}
	var termID map[string]int32
	err := s.writeTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		termID, err = insertTerms(ctx, tx, slices.Sorted(maps.Keys(set)))
		return err
	})
	return termID, err
}

// insertTerms adds the terms (sorted) to the dictionary and returns their
// ids. A term another write added and committed while this statement
// waited for it is not in the statement's snapshot; it is read again.
func insertTerms(ctx context.Context, tx pgx.Tx, terms []string) (map[string]int32, error) {
	termID := make(map[string]int32, len(terms))
	var (
		tid  int32
		term string
	)
	scan := func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&tid, &term}, func() error { termID[term] = tid; return nil })
		return err
	}
	rows, err := tx.Query(ctx, `WITH added AS (
			INSERT INTO terms (term) SELECT unnest($1::text[]) ON CONFLICT (term) DO NOTHING RETURNING id, term)
		SELECT id, term FROM added UNION ALL SELECT id, term FROM terms WHERE term = ANY($1)`, terms)
	if err == nil {
		err = scan(rows)
	}
	if err != nil {
		return nil, fmt.Errorf("adding terms: %w", err)
	}
	if len(termID) == len(terms) {
		return termID, nil
	}
	var missing []string
	for _, t := range terms {
		if _, ok := termID[t]; !ok {
			missing = append(missing, t)
		}
	}
	rows, err = tx.Query(ctx, `SELECT id, term FROM terms WHERE term = ANY($1)`, missing)
	if err == nil {
		err = scan(rows)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the ids of %d terms added meanwhile: %w", len(missing), err)
	}
	if len(termID) != len(terms) {
		return nil, fmt.Errorf("adding terms: %d of %d have no id", len(terms)-len(termID), len(terms))
	}
	return termID, nil
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
	return s.refreshImpactsIf(ctx, 0, true, func(corpusStats) bool { return true })
}

// refreshImpactsIf recomputes every impact when need holds for the
// statistics read under the statistics lock, held alone. Unless wait is
// set, it gives up at once when a write holds the lock.
func (s *Store) refreshImpactsIf(ctx context.Context, d time.Duration, wait bool, need func(corpusStats) bool) error {
	return s.writeTxWithin(ctx, d, func(ctx context.Context, tx pgx.Tx) error {
		if wait {
			if _, err := tx.Exec(ctx, statsLockAloneSQL); err != nil {
				return fmt.Errorf("taking the statistics lock: %w", err)
			}
		} else {
			var got bool
			if err := tx.QueryRow(ctx, statsTryLockAloneSQL).Scan(&got); err != nil {
				return fmt.Errorf("taking the statistics lock: %w", err)
			}
			if !got {
				return nil
			}
		}
		var c corpusStats
		if err := tx.QueryRow(ctx, corpusStatsRefSQL).Scan(&c.nDocs, &c.totalLen, &c.avgdlRef); err != nil {
			return fmt.Errorf("reading the corpus statistics: %w", err)
		}
		if !need(c) {
			return nil
		}
		if err := refreshImpacts(ctx, tx, c.avgdl()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE corpus_stats SET avgdl_ref = $1`, c.avgdl())
		return err
	})
}

// refreshIfDrifted recomputes the impacts after a write when the average
// length has drifted from the reference and the corpus is small enough
// (refreshLimit). A write holds the statistics lock shared, so it cannot
// do it in its own transaction; after it ends (committed or not: the last
// write to end must check) it tries the lock alone and, when another write
// is in flight, leaves the refresh to that one's own check after it ends. While writes overlap without a gap, the
// reference can so lag the average by more than refreshDrift; scores then
// use the reference the impacts were written with (see PERFORMANCE.md).
func (s *Store) refreshIfDrifted(ctx context.Context) {
	need := func(c corpusStats) bool {
		return c.nDocs > 0 && c.nDocs <= refreshLimit && (c.avgdlRef <= 0 || drifted(c.avgdlRef, c.avgdl()))
	}
	var c corpusStats
	err := s.read(ctx, func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, corpusStatsRefSQL).Scan(&c.nDocs, &c.totalLen, &c.avgdlRef)
	})
	if err == nil && need(c) {
		err = s.refreshImpactsIf(ctx, s.writeTimeout, false, need)
	}
	if err != nil {
		s.log.WarnContext(ctx, "recomputing BM25 impacts after a write", "error", err)
	}
}
