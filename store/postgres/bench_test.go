package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/store/sqlite"
)

// sharedDatasets is where the labelled collections live, beside the
// project (../shared/datasets from the repository root).
const sharedDatasets = "../../../shared/datasets"

// rankedQuery is one way of answering a query with ranked item ids.
type rankedQuery func(ctx context.Context, text string, limit int) ([]string, error)

// tsRankSQL is the reference: Postgres's own ranking, ts_rank over a
// tsvector of the same words (an OR of the query's lexemes), GIN-indexed,
// returning the same item columns the store's queries return.
const tsRankSQL = `WITH q AS (
		SELECT (SELECT string_agg(quote_literal(l), ' | ') FROM unnest(tsvector_to_array(to_tsvector('english', $1))) l)::tsquery AS q)
	SELECT i.id, i.kind, i.text, i.content, i.metadata, i.updated_at, i.version,
		i.access_count, i.last_accessed_at, i.byte_size, i.tokens,
		(SELECT json_agg(json_build_object('type', l.type, 'target', l.target, 'strength', l.strength) ORDER BY l.position)
		 FROM links l WHERE l.source = i.id),
		ts_rank(i.tsv, q.q) AS r
	FROM items i, q WHERE i.tsv @@ q.q
	ORDER BY r DESC, i.id LIMIT $2`

// addTSVector adds the reference's tsvector column and GIN index (only
// benchmarks do: the store itself never uses them).
func addTSVector(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	_, err := pool.Exec(b.Context(), `ALTER TABLE items ADD COLUMN IF NOT EXISTS tsv tsvector
		GENERATED ALWAYS AS (to_tsvector('english', text)) STORED;
		CREATE INDEX IF NOT EXISTS items_tsv ON items USING gin (tsv)`)
	if err != nil {
		b.Fatalf("adding the ts_rank reference column: %v", err)
	}
}

func tsRank(pool *pgxpool.Pool) rankedQuery {
	return func(ctx context.Context, text string, limit int) ([]string, error) {
		rows, err := pool.Query(ctx, tsRankSQL, postgres.Words(text, true, 64), limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			vals, err := rows.Values() // decode every column, as the store does
			if err != nil {
				return nil, err
			}
			ids = append(ids, vals[0].(string))
		}
		return ids, rows.Err()
	}
}

// rawPool connects to dsn for what the store does not offer: the
// reference query, VACUUM, sizes.
func rawPool(b *testing.B, dsn string) *pgxpool.Pool {
	b.Helper()
	pool, err := pgxpool.New(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

func generator(g h4r.Generator) rankedQuery {
	return func(ctx context.Context, text string, limit int) ([]string, error) {
		hits, err := g.Generate(ctx, h4r.CandidateQuery{Text: text, Limit: limit})
		if err != nil {
			return nil, err
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.Item.ID
		}
		return ids, nil
	}
}

// vacuum updates the planner's statistics and the visibility map, which
// index-only scans of the postings need, as autovacuum does after a load.
func vacuum(b *testing.B, pool *pgxpool.Pool) {
	b.Helper()
	if _, err := pool.Exec(b.Context(), `VACUUM ANALYZE`); err != nil {
		b.Fatalf("VACUUM ANALYZE: %v", err)
	}
}

func loadItems(b *testing.B, upsert func(context.Context, []h4r.Item) ([]string, error), items []h4r.Item, batch int) time.Duration {
	b.Helper()
	start := time.Now()
	for i := 0; i < len(items); i += batch {
		if _, err := upsert(b.Context(), items[i:min(i+batch, len(items))]); err != nil {
			b.Fatalf("loading items %d…: %v", i, err)
		}
	}
	return time.Since(start)
}

// measure runs one query per iteration, cycling through texts, and
// reports the latency percentiles; quality is measured once, before.
func measure(b *testing.B, run rankedQuery, texts []string, limit int) {
	b.Helper()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := run(b.Context(), texts[i%len(texts)], limit); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
}

// BenchmarkSciFact loads BEIR SciFact (5,183 abstracts) and answers its
// 300 test queries, top 100, each query the OR of its words, with this
// store's BM25, with the same store at an unlimited term cut (exact BM25),
// with Postgres's ts_rank (the reference, in the same schema and run) and
// with the embedded store's FTS5 bm25(). It reports nDCG@10 and the
// latency percentiles of one candidate query.
//
//	H4R_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test ./store/postgres -run '^$' -bench SciFact -benchtime 300x -count 3 | tee scifact.txt
//	benchstat -col /impl scifact.txt
func BenchmarkSciFact(b *testing.B) {
	dir := filepath.Join(sharedDatasets, "scifact")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("the scifact dataset is not at %s (../shared/datasets beside the repository): %v", dir, err)
	}
	ds, err := bench.LoadBEIR(dir, "test")
	if err != nil {
		b.Fatal(err)
	}
	items := ds.Items()
	texts := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		texts[i] = q.Text
	}

	dsn, fresh := benchSchema(b, "h4r_bench_scifact")
	s := postgres.OpenAt(b, dsn)
	if fresh {
		loadItems(b, s.Upsert, items, 500)
	}
	exact := postgres.OpenAt(b, dsn, postgres.WithTermCut(1<<30))
	pool := rawPool(b, dsn)
	addTSVector(b, pool)
	vacuum(b, pool)

	lite, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "h4r.db"), sqlite.WithLogger(postgres.QuietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { lite.Close() })
	loadItems(b, lite.Upsert, items, 500)

	for _, bc := range []struct {
		name string
		run  rankedQuery
	}{
		{"impl=bm25", generator(s.FullText())},
		{"impl=bm25_exact", generator(exact.FullText())},
		{"impl=ts_rank", tsRank(pool)},
		{"impl=sqlite_fts5", generator(lite.FullText())},
	} {
		ndcg := 0.0
		for i, q := range ds.Queries {
			ranked, err := bc.run(b.Context(), texts[i], 100)
			if err != nil {
				b.Fatal(err)
			}
			ndcg += bench.NDCG(ranked, ds.Qrels[q.ID], 10)
		}
		ndcg /= float64(len(ds.Queries))
		b.Run(bc.name, func(b *testing.B) {
			measure(b, bc.run, texts, 100)
			b.ReportMetric(ndcg, "nDCG@10") // after the loop, which resets metrics
		})
	}
}

// benchSchema returns a database URL for a benchmark's data and whether
// the schema is new (to be loaded). With H4R_BENCH_KEEP=1 the schema is
// named name, kept after the run and reused by the next, so that a large
// load is paid once; otherwise it is a fresh schema dropped at the end.
func benchSchema(b *testing.B, name string) (string, bool) {
	b.Helper()
	if os.Getenv("H4R_BENCH_KEEP") != "1" {
		return postgres.NewSchema(b), true
	}
	conn := postgres.AdminConn(b)
	var exists bool
	if err := conn.QueryRow(b.Context(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	if !exists {
		if _, err := conn.Exec(b.Context(), "CREATE SCHEMA "+name); err != nil {
			b.Fatal(err)
		}
	}
	return postgres.WithSearchPath(b, postgres.TestDSN(b), name), !exists
}
