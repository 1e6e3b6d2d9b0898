package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
)

// readBound is how long a read may take in these tests while writers wait:
// far more than a read needs even on a loaded machine, far less than the
// writers wait. It is a functional bound (did the read get a connection at
// all), not a speed measurement.
const readBound = 10 * time.Second

// lockStatsOn takes the statistics lock alone in a transaction of its own on
// the schema of dsn, as a refresh of the impacts does, and returns the backend's pid
// and the function that releases the lock.
func lockStatsOn(t *testing.T, dsn string) (pid uint32, release func()) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), statsLockAloneSQL); err != nil {
		t.Fatal(err)
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		if err := tx.Rollback(context.Background()); err != nil {
			t.Errorf("releasing the statistics lock: %v", err)
		}
		conn.Close(context.Background())
	}
	t.Cleanup(release)
	return conn.PgConn().PID(), release
}

// waitForBlocked waits until n backends wait, directly or behind each
// other, for a lock the backend pid holds, or until check says to stop
// waiting.
func waitForBlocked(t *testing.T, pid uint32, n int, check func() bool) {
	t.Helper()
	admin := adminConn(t)
	give := time.Now().Add(time.Minute) // only a broken test waits this long
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		var blocked int
		// Waiters queue: the second waits for the first, not the holder.
		err := admin.QueryRow(t.Context(), `WITH RECURSIVE waiting (pid) AS (
				SELECT $1::int
				UNION
				SELECT a.pid FROM pg_stat_activity a, waiting w WHERE w.pid = ANY(pg_blocking_pids(a.pid)))
			SELECT count(*) - 1 FROM waiting`, int32(pid)).Scan(&blocked)
		if err != nil {
			t.Fatal(err)
		}
		if blocked >= n {
			return
		}
		if time.Now().After(give) || (check != nil && check()) {
			rows, _ := admin.Query(t.Context(), `SELECT pid, state, coalesce(wait_event_type, ''), coalesce(wait_event, ''), left(query, 60), pg_blocking_pids(pid)::text FROM pg_stat_activity WHERE datname = current_database()`)
			for rows.Next() {
				var p int32
				var st, wt, we, q, b string
				_ = rows.Scan(&p, &st, &wt, &we, &q, &b)
				t.Logf("%d %s %s %s %q blocked by %s", p, st, wt, we, q, b)
			}
			t.Fatalf("%d backends wait for the lock the backend %d holds, want %d", blocked, pid, n)
		}
		time.Sleep(wait)
	}
}

// With one pool, ingests waiting for the statistics lock held
// every connection and reads got none. Writes now have a pool of their
// own: with the read pool the size the one pool had (4), twice as many
// writers as that wait for the lock, and reads still get connections and
// answer while every writer is still blocked.
func TestReadsAnswerWhileWritersWaitForTheLock(t *testing.T) {
	dsn := newSchema(t)
	s := openAt(t, dsn, WithMaxReadConns(4), WithMaxWriteConns(2), WithWriteTimeout(time.Minute))
	seeds := []h4r.Item{
		{ID: "seed-a", Text: "login test failed on the selector", Links: []h4r.Link{{Type: "caused_by", Target: "seed-b"}}},
		{ID: "seed-b", Text: "checkout flaky timeout"},
	}
	if _, err := s.Upsert(t.Context(), seeds); err != nil {
		t.Fatal(err)
	}
	pid, release := lockStatsOn(t, dsn)

	const writers = 8
	done := make(chan error, writers)
	for i := range writers {
		go func() {
			_, err := s.Upsert(t.Context(), []h4r.Item{{ID: fmt.Sprintf("w-%d", i), Text: "written while reads go on"}})
			done <- err
		}()
	}
	// Every write connection is now taken by a writer waiting in
	// Postgres; the other writers wait for a connection.
	waitForBlocked(t, pid, int(s.writes.Config().MaxConns), func() bool { return len(done) > 0 })
	if len(done) > 0 {
		t.Fatalf("a writer finished: %v", <-done)
	}

	ctx, cancel := context.WithTimeout(t.Context(), readBound)
	defer cancel()
	reads := []struct {
		name string
		read func(ctx context.Context) error
	}{
		{"get", func(ctx context.Context) error {
			it, err := s.Get(ctx, "seed-a")
			if err == nil && it.ID != "seed-a" {
				err = fmt.Errorf("got %q", it.ID)
			}
			return err
		}},
		{"count", func(ctx context.Context) error {
			n, err := s.Count(ctx)
			if err == nil && n != len(seeds) {
				err = fmt.Errorf("count %d, want %d: a blocked write was counted", n, len(seeds))
			}
			return err
		}},
		{"full text", func(ctx context.Context) error {
			hits, err := s.FullText().Generate(ctx, h4r.CandidateQuery{Text: "login selector", Limit: 10})
			if err == nil && (len(hits) == 0 || hits[0].Item.ID != "seed-a") {
				err = fmt.Errorf("hits %v, want seed-a first", hits)
			}
			return err
		}},
		{"graph", func(ctx context.Context) error {
			hits, err := s.Graph().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"seed-a"}, MaxHops: 1, Limit: 10})
			if err == nil && len(hits) != 2 {
				err = fmt.Errorf("%d hits, want the anchor and its link", len(hits))
			}
			return err
		}},
		{"ping", s.Ping},
	}
	// Concurrently, as a pack's generators read.
	errs := make(chan error, len(reads))
	for _, r := range reads {
		go func() {
			if err := r.read(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", r.name, err)
				return
			}
			errs <- nil
		}()
	}
	for range reads {
		if err := <-errs; err != nil {
			t.Errorf("read while writers wait for the lock: %v", err)
		}
	}
	if n := len(done); n != 0 {
		t.Fatalf("%d writers finished while the statistics lock was held", n)
	}

	release()
	for range writers {
		if err := <-done; err != nil {
			t.Errorf("writer after the lock was released: %v", err)
		}
	}
	if n, err := s.Count(t.Context()); err != nil || n != len(seeds)+writers {
		t.Errorf("count %d (%v), want %d", n, err, len(seeds)+writers)
	}
}

// tableCounts is what a write changes: every table's rows and the
// statistics, as one string to compare. Terms count when some item holds
// them: a write adds its new terms before its transaction (addTerms), and
// those of a write that then fails stay in the dictionary, held by none.
func tableCounts(t *testing.T, s *Store) string {
	t.Helper()
	var out string
	err := s.pool.QueryRow(t.Context(), `SELECT format('items %s, postings %s, terms %s (df %s), links %s, deleted %s, stats %s/%s',
		(SELECT count(*) FROM items), (SELECT count(*) FROM postings), (SELECT count(DISTINCT term_id) FROM postings),
		(SELECT coalesce(sum(df), 0) FROM term_df), (SELECT count(*) FROM links), (SELECT count(*) FROM deleted_versions),
		(SELECT sum(n_docs) FROM stats_shards), (SELECT sum(total_len) FROM stats_shards))`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// slowWritesOf installs a test-only trigger in the schema of dsn that makes
// any write of item id take a minute, as a write stuck behind a slow disk
// would.
func slowWritesOf(t *testing.T, dsn, id string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	fn := `CREATE FUNCTION slow_sentinel() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.id = ` + quoteLiteral(id) + ` THEN PERFORM pg_sleep(60); END IF;
			RETURN NEW;
		END $$`
	for _, stmt := range []string{fn, `CREATE TRIGGER slow_sentinel BEFORE INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION slow_sentinel()`} {
		if _, err := conn.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("installing the slow trigger: %v", err)
		}
	}
}

// A write past its deadline fails with unavailable (503 with Retry-After
// at the server), is rolled back, and leaves the lock to the next write.
// The caller's own deadline stays the caller's: it is not reported as the
// store being busy.
func TestWritePastItsDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	tests := []struct {
		name string
		// block makes the next write wait or run long; it returns the
		// function that ends the blockage.
		block    func(t *testing.T, dsn string, s *Store) func()
		write    func(ctx context.Context, s *Store) error
		ctx      func(t *testing.T) context.Context
		wantCode string
		absent   string // an id the write must not have left behind
	}{
		{
			name:     "upsert waiting for the statistics lock",
			block:    func(t *testing.T, dsn string, _ *Store) func() { _, release := lockStatsOn(t, dsn); return release },
			write:    upsertOne("late"),
			wantCode: h4r.EUNAVAILABLE, absent: "late",
		},
		{
			name:     "delete waiting for the statistics lock",
			block:    func(t *testing.T, dsn string, _ *Store) func() { _, release := lockStatsOn(t, dsn); return release },
			write:    func(ctx context.Context, s *Store) error { return s.Delete(ctx, "seed") },
			wantCode: h4r.EUNAVAILABLE,
		},
		{
			name: "upsert waiting for a write connection",
			block: func(t *testing.T, _ string, s *Store) func() {
				conn, err := s.writes.Acquire(t.Context()) // the pool's one connection, as a long write holds it
				if err != nil {
					t.Fatal(err)
				}
				return conn.Release
			},
			write:    upsertOne("late"),
			wantCode: h4r.EUNAVAILABLE, absent: "late",
		},
		{
			name:     "upsert whose statements outlast the deadline",
			block:    func(t *testing.T, dsn string, _ *Store) func() { slowWritesOf(t, dsn, "slow"); return func() {} },
			write:    upsertOne("slow"),
			wantCode: h4r.EUNAVAILABLE, absent: "slow",
		},
		{
			name:  "the caller's deadline before the store's",
			block: func(t *testing.T, dsn string, _ *Store) func() { _, release := lockStatsOn(t, dsn); return release },
			write: upsertOne("late"),
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), deadline/3)
				t.Cleanup(cancel)
				return ctx
			},
			wantCode: h4r.EINTERNAL, absent: "late", // the server answers a context deadline with 504
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dsn := newSchema(t)
			seed := openAt(t, dsn, WithWriteTimeout(time.Minute))
			if _, err := seed.Upsert(t.Context(), []h4r.Item{{ID: "seed", Text: "an item written before", Links: []h4r.Link{{Type: "caused_by", Target: "x"}}}}); err != nil {
				t.Fatal(err)
			}
			s := openAt(t, dsn, WithMaxWriteConns(1), WithWriteTimeout(deadline))
			before := tableCounts(t, s)
			unblock := tt.block(t, dsn, s)
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			err := tt.write(ctx, s)
			unblock()
			if got := h4r.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("write returned %v (code %q), want code %q", err, got, tt.wantCode)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not say a deadline ended the write", err)
			}
			if after := tableCounts(t, s); after != before {
				t.Errorf("the failed write changed the tables:\nbefore %s\nafter  %s", before, after)
			}
			if tt.absent != "" {
				if _, err := s.Get(t.Context(), tt.absent); h4r.ErrorCode(err) != h4r.ENOTFOUND {
					t.Errorf("Get(%q) after the failed write: %v, want not_found", tt.absent, err)
				}
			}
			// The lock and the connection were released: the next write,
			// with nothing in its way, lands.
			if _, err := seed.Upsert(t.Context(), []h4r.Item{{ID: "next", Text: "after the failure"}}); err != nil {
				t.Fatalf("the next write failed: %v", err)
			}
		})
	}
}

func upsertOne(id string) func(ctx context.Context, s *Store) error {
	return func(ctx context.Context, s *Store) error {
		_, err := s.Upsert(ctx, []h4r.Item{{ID: id, Text: "a write that cannot finish in time", Links: []h4r.Link{{Type: "caused_by", Target: "seed"}}}})
		return err
	}
}

func TestPoolOptionsRejected(t *testing.T) {
	tests := []struct {
		name      string
		opt       Option
		wantField string
	}{
		{"no read connections", WithMaxReadConns(0), "maxReadConns"},
		{"no write connections", WithMaxWriteConns(0), "maxWriteConns"},
		{"zero write timeout", WithWriteTimeout(0), "writeTimeout"},
		{"negative write timeout", WithWriteTimeout(-time.Second), "writeTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := buildOptions([]Option{tt.opt})
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != tt.wantField {
				t.Fatalf("buildOptions: %v, want invalid_argument for %s", err, tt.wantField)
			}
		})
	}
}
