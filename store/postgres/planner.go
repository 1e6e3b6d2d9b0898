package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// analyzeMinDocs is the smallest corpus the store analyses itself; below
// it, plans hardly matter.
const analyzeMinDocs = 1000

// refreshPlannerStats runs ANALYZE on the tables full-text search reads
// once the corpus holds at least analyzeMinDocs items and twice as many as
// the statistics last saw. A bulk load through the API is then queried with
// plans made for its size, not for empty tables; doubling bounds the
// analyses to a logarithm of the corpus size. One process analyses at a
// time; a failure is logged, never an ingest error (the items are stored).
// It also starts a VACUUM when the corpus grew enough (maybeVacuum).
func (s *Store) refreshPlannerStats(ctx context.Context) {
	if !s.analyzing.CompareAndSwap(false, true) {
		return
	}
	defer s.analyzing.Store(false)
	var n, seen int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT coalesce(sum(n_docs), 0)::bigint FROM stats_shards), analyzed_docs FROM corpus_stats`).Scan(&n, &seen); err != nil {
		s.log.WarnContext(ctx, "reading the corpus statistics for ANALYZE", "error", err)
		return
	}
	if n < analyzeMinDocs {
		return
	}
	if n >= 2*seen {
		if err := s.analyzeTables(ctx, n); err != nil {
			s.log.WarnContext(ctx, "refreshing the planner's statistics failed; autovacuum will catch up", "items", n, "error", err)
		} else {
			s.log.InfoContext(ctx, "refreshed the planner's statistics", "items", n)
		}
	}
	s.maybeVacuum(n)
}

// maybeVacuum starts a VACUUM in the background when the corpus holds n
// items and grew by autovacuum's insert threshold (1,000 items and a fifth)
// since the last one this process started, unless one is running.
func (s *Store) maybeVacuum(n int64) {
	last := s.vacuumedDocs.Load()
	if n-last < analyzeMinDocs+last/5 || !s.vacuuming.CompareAndSwap(false, true) {
		return
	}
	s.vacuumedDocs.Store(n)
	s.vacuums.Add(1)
	go func() {
		defer s.vacuums.Done()
		defer s.vacuuming.Store(false)
		s.vacuum(s.vacuumCtx)
	}()
}

// vacuum runs VACUUM on the tables full-text search reads, in the
// background (it reads the pages written since the last one; SKIP_LOCKED
// passes over a table another replica is vacuuming). Without it
// the visibility map of a freshly loaded postings table is empty until
// autovacuum comes by (never, where it is off): the planner then reads a
// term's postings by a bitmap heap scan of every one of them and sorts
// them, instead of the first term cut of them from the (term, impact)
// index alone, and the 10k-item load test read ~1,900 heap pages per
// query term. A failure is logged; plans are then what they were.
func (s *Store) vacuum(ctx context.Context) {
	if _, err := s.pool.Exec(ctx, `VACUUM (SKIP_LOCKED) items, postings, terms`); err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "vacuuming the full-text tables failed; autovacuum will catch up", "error", err)
		}
		return
	}
	s.vacuumed.Add(1)
}

// analyzeTables runs ANALYZE on items, postings, terms and corpus_stats
// (one row, which unanalysed the planner guesses at 1,330) and records that
// the statistics saw n items. The record updates the statistics row, which
// writes lock: it is a write (the write pool, the write deadline), so that
// it never waits for the lock on a connection reads need.
func (s *Store) analyzeTables(ctx context.Context, n int64) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE items, postings, terms, term_df, corpus_stats`); err != nil {
		return fmt.Errorf("analyzing: %w", err)
	}
	err := s.writeTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE corpus_stats SET analyzed_docs = $1`, n)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the analysed size: %w", err)
	}
	return nil
}
