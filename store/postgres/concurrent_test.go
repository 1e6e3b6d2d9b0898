package postgres

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
)

// waitForSleep waits until a backend of the test database sleeps in
// pg_sleep (the slow trigger of slowWritesOf), so that its write is in
// flight and holds whatever a write holds.
func waitForSleep(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND query LIKE 'INSERT INTO items%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the slow write never started")
}

// A write in flight does not hold up another: the second upsert and
// delete commit while the first still runs, and the statistics the
// first adds at its end are exact once it is done. When every write
// locked one statistics row to its commit, the second waited for the
// first.
func TestWritesDoNotWaitForEachOther(t *testing.T) {
	dsn := newSchema(t)
	s := openAt(t, dsn)
	if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "seed", Text: "seed words here"}, {ID: "gone", Text: "to be deleted"}}); err != nil {
		t.Fatal(err)
	}
	slowWritesOf(t, dsn, "slow")
	ctx, cancel := context.WithCancel(t.Context())
	slowDone := make(chan error, 1)
	go func() {
		_, err := s.Upsert(ctx, []h4r.Item{{ID: "slow", Text: "a slow write"}})
		slowDone <- err
	}()
	defer func() { cancel(); <-slowDone }()
	waitForSleep(t, adminConn(t))

	fast, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if _, err := s.Upsert(fast, []h4r.Item{{ID: "fast", Text: "a fast write of several words"}}); err != nil {
		t.Fatalf("upsert beside a write in flight: %v", err)
	}
	if err := s.Delete(fast, "gone"); err != nil {
		t.Fatalf("delete beside a write in flight: %v", err)
	}
	hits, err := s.FullText().Generate(fast, h4r.CandidateQuery{Text: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); !slices.Equal(got, []string{"fast"}) {
		t.Errorf("hits %v, want [fast]", got)
	}
	if n, err := s.Count(fast); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2", n, err)
	}
	cancel()
	if err := <-slowDone; err == nil {
		t.Error("the cancelled slow write succeeded")
	}
	slowDone <- nil // for the deferred wait
	var ok bool
	if err := s.pool.QueryRow(t.Context(), `SELECT (SELECT sum(n_docs) FROM stats_shards) = (SELECT count(*) FROM items)
		AND (SELECT sum(total_len) FROM stats_shards) = (SELECT sum(doc_len) FROM items)`).Scan(&ok); err != nil || !ok {
		t.Errorf("statistics exact after the rollback: %v, %v", ok, err)
	}
}

// Change-log generations follow commits, not statements: a transaction
// that logged its item first but commits last gets the later generation,
// so a reader that has read up to the other's generation still finds it.
// And it holds no lock that stops the other from committing meanwhile.
func TestChangeGenerationsFollowCommits(t *testing.T) {
	dsn := newSchema(t)
	s := openAt(t, dsn)
	if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "seed", Text: "seed"}}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	first, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Rollback(context.Background()) }()
	if _, err := first.Exec(t.Context(), `INSERT INTO items (id, kind, text, metadata, created_at, updated_at, version, byte_size, tokens, doc_len)
		VALUES ('first', 'note', 'first', '{}', now(), now(), 1, 1, 1, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(t.Context(), `INSERT INTO links (source, position, target, type, strength) VALUES ('first', 0, 'seed', 'related', 1)`); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if _, err := s.Upsert(ctx, []h4r.Item{{ID: "second", Text: "second", Links: []h4r.Link{{Type: "related", Target: "seed"}}}}); err != nil {
		t.Fatalf("upsert while another transaction has logged changes: %v", err)
	}
	mark, err := s.ItemChangeMark(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	ids, _, reload, err := s.ItemChangesSince(t.Context(), mark, nil)
	if err != nil || reload {
		t.Fatalf("ItemChangesSince: %v (reload %v)", err, reload)
	}
	if !slices.Equal(ids, []string{"first"}) {
		t.Errorf("changes after the second commit %v, want [first]", ids)
	}
	for _, table := range []string{"item_changes", "graph_changes"} {
		t.Run(table, func(t *testing.T) {
			var later bool
			err := s.pool.QueryRow(t.Context(), `SELECT (SELECT min(gen) FROM `+table+` WHERE item_id = 'first') >
				(SELECT max(gen) FROM `+table+` WHERE item_id = 'second')`).Scan(&later)
			if err != nil {
				t.Fatal(err)
			}
			if !later {
				t.Error("the transaction that committed last has the earlier generation")
			}
		})
	}
}

// Writes with an embedder run side by side up to their vectors: the
// vector lock is taken after the rows, so a write held in flight in its
// item insert does not stop another from writing items and vectors, and
// a delete (which holds the lock from its start) still commits. Taking the
// lock with the statistics lock makes the second write time out.
func TestVectorWritesDoNotWaitForEachOther(t *testing.T) {
	dsn := newSchema(t)
	h, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	s := openAt(t, dsn)
	s.EnableVectors(h)
	if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "seed", Text: "seed words here"}, {ID: "gone", Text: "to be deleted"}}); err != nil {
		t.Fatal(err)
	}
	slowWritesOf(t, dsn, "slow")
	ctx, cancel := context.WithCancel(t.Context())
	slowDone := make(chan error, 1)
	go func() {
		_, err := s.Upsert(ctx, []h4r.Item{{ID: "slow", Text: "a slow write"}})
		slowDone <- err
	}()
	defer func() { cancel(); <-slowDone }()
	waitForSleep(t, adminConn(t))

	fast, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	if _, err := s.Upsert(fast, []h4r.Item{{ID: "fast", Text: "a fast write of several words"}}); err != nil {
		t.Fatalf("upsert with an embedder beside a write in flight: %v", err)
	}
	if err := s.Delete(fast, "gone"); err != nil {
		t.Fatalf("delete beside a write in flight: %v", err)
	}
	var vectors []string
	rows, err := s.pool.Query(fast, `SELECT item_id FROM item_vectors ORDER BY vseq`)
	if err == nil {
		vectors, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vectors, []string{"seed", "fast"}) {
		t.Errorf("vectors of %v in vseq order, want [seed fast]", vectors)
	}
	cancel()
	if err := <-slowDone; err == nil {
		t.Error("the cancelled slow write succeeded")
	}
	slowDone <- nil // for the deferred wait
}
