package postgres

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/store/internal/sqlkit"
)

// The upkeep of the BM25 postings: term analysis of written items, the
// corpus statistics (the write lock), postings with precomputed impacts,
// and their refresh when the average length drifts. The write path
// (items.go) calls it inside its transaction.

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
	statsLockShared      = `pg_advisory_xact_lock_shared(hashtextextended(current_schema(), 7152))`
	statsLockAlone       = `pg_advisory_xact_lock(hashtextextended(current_schema(), 7152))`
	statsLockAloneSQL    = `SELECT ` + statsLockAlone
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
	termsEpoch      int64 // the terms table's file node (termIDCache)
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
	// One round trip: the lock is chosen by the reference length read in
	// the statement that takes it, and the statements after it run in
	// order, each in a snapshot taken after the one before.
	b := &pgx.Batch{}
	b.Queue(`SELECT $1 OR c.avgdl_ref <= 0, `+termsEpochSQL[len("SELECT "):]+`,
		(CASE WHEN $1 OR c.avgdl_ref <= 0 THEN `+statsLockAlone+` ELSE `+statsLockShared+` END)::text
		FROM corpus_stats c`, alone)
	if vectors {
		b.Queue(vectorLockSQL)
	}
	// The connection's own shard first, so that a writer keeps adding to
	// the same term_df rows (fewer rows, updated in place) rather than
	// spreading every term over all the shards.
	b.Queue(`SELECT shard FROM stats_shards ORDER BY shard = pg_backend_pid() % $1 DESC, random() LIMIT 1 FOR UPDATE SKIP LOCKED`, statShards)
	b.Queue(corpusStatsRefSQL)
	c := &corpusStats{}
	claimed := true
	err := func() error {
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		var void string
		if err := br.QueryRow().Scan(&c.alone, &c.termsEpoch, &void); err != nil {
			return fmt.Errorf("taking the statistics lock: %w", err)
		}
		if vectors {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("taking the vector lock: %w", err)
			}
		}
		err := br.QueryRow().Scan(&c.shard)
		if errors.Is(err, pgx.ErrNoRows) {
			claimed, err = false, nil
		}
		if err != nil {
			return fmt.Errorf("claiming a statistics shard: %w", err)
		}
		if err := br.QueryRow().Scan(&c.nDocs, &c.totalLen, &c.avgdlRef); err != nil {
			return fmt.Errorf("reading the corpus statistics: %w", err)
		}
		return br.Close()
	}()
	if err != nil {
		return nil, err
	}
	if claimed {
		return c, nil
	}
	// Every shard held: wait for one.
	if err := tx.QueryRow(ctx, `SELECT shard FROM stats_shards WHERE shard = floor(random() * $1)::int FOR UPDATE`, statShards).Scan(&c.shard); err != nil {
		return nil, fmt.Errorf("claiming a statistics shard: %w", err)
	}
	return c, nil
}

// save adds the write's changes to its shard, and the reference length
// when the write set it.
func (c *corpusStats) save(ctx context.Context, tx pgx.Tx) error {
	var t batch
	c.queueSave(&t)
	return t.send(ctx, tx)
}

// queueSave is save, queued in t.
func (c *corpusStats) queueSave(t *batch) {
	if c.dDocs != 0 || c.dLen != 0 {
		t.queue("updating the corpus statistics", `UPDATE stats_shards SET n_docs = n_docs + $2, total_len = total_len + $3 WHERE shard = $1`,
			c.shard, c.dDocs, c.dLen)
		c.dDocs, c.dLen = 0, 0
	}
	if c.refChanged {
		t.queue("updating the reference length", `UPDATE corpus_stats SET avgdl_ref = $1`, c.avgdlRef)
		c.refChanged = false
	}
}

// batch collects statements whose results a write does not read, to send
// them in one round trip; each carries what it does, for its error.
type batch struct {
	b    pgx.Batch
	what []string
}

func (t *batch) queue(what, sql string, args ...any) {
	t.b.Queue(sql, args...)
	t.what = append(t.what, what)
}

// send runs the queued statements in order in tx and empties t.
func (t *batch) send(ctx context.Context, tx pgx.Tx) error {
	if len(t.what) == 0 {
		return nil
	}
	br := tx.SendBatch(ctx, &t.b)
	var err error
	for _, what := range t.what {
		if _, err = br.Exec(); err != nil {
			err = fmt.Errorf("%s: %w", what, err)
			break
		}
	}
	*t = batch{}
	return errors.Join(err, br.Close())
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

// posting is one row of the postings table.
type posting struct {
	term   int32
	impact float32
	seq    int64
	tf     int16
}

// indexKey orders postings by term, then impact descending, as the index
// does, in one comparison: term ids are positive and impacts positive
// floats, whose bits order as their values.
func (p posting) indexKey() uint64 {
	return uint64(uint32(p.term))<<32 | uint64(^math.Float32bits(p.impact))
}

// copyPostings encodes rows in COPY's binary format, the columns being
// term_id int4, impact float4, item_seq int8 and tf int2: written here
// directly, without a value per column to encode, as the write's largest
// statement is.
func copyPostings(rows []posting) []byte {
	const rowSize = 2 + 4 + 4 + 4 + 4 + 4 + 8 + 4 + 2
	b := make([]byte, 0, 19+len(rows)*rowSize+2)
	b = append(b, "PGCOPY\n\xff\r\n\x00"...)
	b = binary.BigEndian.AppendUint32(b, 0) // flags
	b = binary.BigEndian.AppendUint32(b, 0) // header extension
	for _, p := range rows {
		b = binary.BigEndian.AppendUint16(b, 4)
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(p.term))
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, math.Float32bits(p.impact))
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(p.seq))
		b = binary.BigEndian.AppendUint32(b, 2)
		b = binary.BigEndian.AppendUint16(b, uint16(p.tf))
	}
	return binary.BigEndian.AppendUint16(b, 0xffff) // end of data
}

// writePostings adds the items' postings with impacts, their terms being
// in the dictionary already (addTerms), and queues their counts to df in
// the write's shard in tail. Impacts use the reference average
// length, so that all postings stay comparable; when the corpus is small
// and its average has drifted, every impact is recomputed here.
func (s *Store) writePostings(ctx context.Context, tx pgx.Tx, items []encodedItem, seqByID map[string]int64, termID map[string]int32, stats *corpusStats, tail *batch) error {
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
	var rows []posting
	for _, e := range items {
		seq := seqByID[e.item.ID]
		for j, t := range e.terms {
			rows = append(rows, posting{termID[t], impact(e.tfs[j], e.docLen, stats.avgdlRef), seq, int16(min(e.tfs[j], 32767))})
		}
	}
	// In the order of the (term, impact) index: consecutive rows go to the
	// same or neighbouring leaf pages, which a quarter less CPU inserts
	// than rows in item order, each to a page of another term.
	slices.SortFunc(rows, func(a, b posting) int {
		if ka, kb := a.indexKey(), b.indexKey(); ka != kb {
			return cmp.Compare(ka, kb)
		}
		return cmp.Compare(a.seq, b.seq)
	})
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(copyPostings(rows)),
		`COPY postings (term_id, impact, item_seq, tf) FROM STDIN BINARY`); err != nil {
		return fmt.Errorf("writing %d postings: %w", len(rows), err)
	}
	ids := make([]int32, len(terms))
	counts := make([]int32, len(terms))
	for i, t := range terms {
		ids[i], counts[i] = termID[t], distinct[t]
	}
	tail.queue("counting terms", `INSERT INTO term_df (term_id, shard, df) SELECT u.id, $3, u.n FROM unnest($1::int[], $2::int[]) AS u (id, n) ORDER BY u.id
		ON CONFLICT (term_id, shard) DO UPDATE SET df = term_df.df + excluded.df`, ids, counts, stats.shard)
	return nil
}

// addTerms returns the ids of the items' terms and the epoch they are
// valid in (termIDCache): from the cache, and for the terms it lacks,
// added to the dictionary (or read) in a transaction of their own, before
// the write's. Writers adding the same new term wait for each other only
// for this short transaction, not until the other's write commits; a term
// whose write then fails stays in the dictionary with no postings (df 0),
// as harmless as a term whose items were deleted.
func (s *Store) addTerms(ctx context.Context, items []encodedItem) (map[string]int32, int64, error) {
	termID := map[string]int32{}
	var missing []string
	c := s.termIDs
	c.mu.Lock()
	epoch := c.epoch
	for _, e := range items {
		for _, t := range e.terms {
			if _, ok := termID[t]; ok {
				continue
			}
			if id, ok := c.m[t]; ok {
				termID[t] = id
			} else {
				termID[t] = 0
				missing = append(missing, t)
			}
		}
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return termID, epoch, nil
	}
	// One statement, committed on its own: no round trips for a
	// transaction. The ids already cached are read again too when the
	// table turns out to have changed under them.
	wctx, finish := sqlkit.WriteWithin(ctx, s.writeTimeout)
	got, now, err := insertTerms(wctx, s.writes, slices.Sorted(slices.Values(missing)))
	if err == nil && now != epoch && len(missing) < len(termID) {
		got, now, err = insertTerms(wctx, s.writes, slices.Sorted(maps.Keys(termID)))
	}
	if err != nil {
		err = withCause(wctx, err)
	}
	if err = finish(err); err != nil {
		return nil, 0, err
	}
	maps.Copy(termID, got)
	c.mu.Lock()
	if c.epoch != now || len(c.m)+len(got) > maxCachedWords {
		clear(c.m)
		c.epoch = now
	}
	maps.Copy(c.m, got)
	c.mu.Unlock()
	return termID, now, nil
}

// insertTerms adds the terms (sorted) to the dictionary and returns their
// ids and the terms table's epoch (termIDCache). A term another write
// added and committed while this statement waited for it is not in the
// statement's snapshot; it is read again.
func insertTerms(ctx context.Context, q querier, terms []string) (map[string]int32, int64, error) {
	termID := make(map[string]int32, len(terms))
	var (
		tid   *int32
		term  *string
		epoch int64
	)
	rows, err := q.Query(ctx, `WITH added AS (
			INSERT INTO terms (term) SELECT unnest($1::text[]) ON CONFLICT (term) DO NOTHING RETURNING id, term)
		SELECT NULL::int, NULL::text, (`+termsEpochSQL+`)
		UNION ALL SELECT id, term, 0 FROM added UNION ALL SELECT id, term, 0 FROM terms WHERE term = ANY($1)`, terms)
	if err == nil {
		var e int64
		_, err = pgx.ForEachRow(rows, []any{&tid, &term, &e}, func() error {
			if term == nil {
				epoch = e
			} else {
				termID[*term] = *tid
			}
			return nil
		})
	}
	if err != nil {
		return nil, 0, fmt.Errorf("adding terms: %w", err)
	}
	if len(termID) == len(terms) {
		return termID, epoch, nil
	}
	var missing []string
	for _, t := range terms {
		if _, ok := termID[t]; !ok {
			missing = append(missing, t)
		}
	}
	rows, err = q.Query(ctx, `SELECT id, term FROM terms WHERE term = ANY($1)`, missing)
	if err == nil {
		var (
			id int32
			t  string
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &t}, func() error { termID[t] = id; return nil })
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading the ids of %d terms added meanwhile: %w", len(missing), err)
	}
	if len(termID) != len(terms) {
		return nil, 0, fmt.Errorf("adding terms: %d of %d have no id", len(terms)-len(termID), len(terms))
	}
	return termID, epoch, nil
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
