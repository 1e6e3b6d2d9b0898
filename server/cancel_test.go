package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/internal/sqlitetest"
	"github.com/h4r/h4r/server"
)

// blocker holds a store's write (or read) in the middle and says when the
// server's request is stuck behind it.
type blocker struct {
	// hold takes the lock; release gives it back.
	hold func(t *testing.T) (release func())
	// waiting returns once the server's statement waits for the lock, or
	// at once when the store cannot show it (SQLite).
	waiting func(t *testing.T)
}

// cancelStore is one store the cancellation tests run on.
type cancelStore struct {
	name      string
	configure func(t *testing.T, c *config.Config) (write, read blocker)
}

// cancelStores are both stores, each with a way to stop the server's
// write in the middle: on Postgres a lock on links, which a write takes
// after it has written the items, their postings and the statistics; on
// SQLite the file's write lock held by another connection, as another
// process would hold it.
func cancelStores() []cancelStore {
	return []cancelStore{
		{"embedded", func(t *testing.T, c *config.Config) (blocker, blocker) {
			path := c.SQLitePath()
			write := blocker{
				hold:    func(t *testing.T) func() { return sqlitetest.HoldWriteLock(t, path) },
				waiting: func(*testing.T) {},
			}
			return write, blocker{} // SQLite readers never wait (WAL)
		}},
		{"postgres", func(t *testing.T, c *config.Config) (blocker, blocker) {
			dsn := pgtest.Schema(t, "h4r_server_cancel")
			c.DatabaseURL = dsn
			lock := func(stmt, waitsOn string) blocker {
				return blocker{
					hold: func(t *testing.T) func() {
						conn, err := pgx.Connect(t.Context(), dsn)
						if err != nil {
							t.Fatal(err)
						}
						tx, err := conn.Begin(t.Context())
						if err != nil {
							t.Fatal(err)
						}
						if _, err := tx.Exec(t.Context(), stmt); err != nil {
							t.Fatal(err)
						}
						return func() {
							if err := tx.Rollback(context.Background()); err != nil {
								t.Errorf("releasing the lock: %v", err)
							}
							conn.Close(context.Background())
						}
					},
					waiting: func(t *testing.T) { waitForLockWait(t, dsn, waitsOn) },
				}
			}
			// SHARE blocks writes to links and lets reads through;
			// ACCESS EXCLUSIVE blocks the pack's reads of items.
			return lock("LOCK TABLE links IN SHARE MODE", "links"), lock("LOCK TABLE items IN ACCESS EXCLUSIVE MODE", "items")
		}},
	}
}

// waitForLockWait returns once a session of the database waits for a
// lock in a statement that mentions table.
func waitForLockWait(t *testing.T, dsn, table string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatalf("no statement on %s waited for the lock within a minute", table)
}

// signalEOF is a request body that says when the client has sent all of
// it.
type signalEOF struct {
	r    io.Reader
	once sync.Once
	sent chan struct{}
}

func (b *signalEOF) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if errors.Is(err, io.EOF) {
		b.once.Do(func() { close(b.sent) })
	}
	return n, err
}

// sendAndCancel sends body to url and cancels the request once the body
// is sent and blocked says the server is stuck.
func sendAndCancel(t *testing.T, url, requestID, body string, blocked func(t *testing.T)) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := &signalEOF{r: strings.NewReader(body), sent: make(chan struct{})}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, b)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", requestID)
	done := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			err = fmt.Errorf("the request was answered %s before it was cancelled", res.Status)
		}
		done <- err
	}()
	select {
	case <-b.sent:
	case err := <-done:
		t.Fatalf("the request ended before its body was sent: %v", err)
	}
	blocked(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request: %v, want it cancelled", err)
	}
}

// accessRecord waits for the access log line of requestID: the server
// writes it once the handler has given up on the cancelled request.
func accessRecord(t *testing.T, logs *logBuffer, requestID string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for _, rec := range logs.records(t, "request") {
			if rec["request_id"] == requestID {
				return rec
			}
		}
	}
	t.Fatalf("no access log line for request %s within a minute", requestID)
	return nil
}

// checkCancelled checks what the server made of a cancelled request: an
// info access line with status 499, no error logged, and the request
// counted as cancelled, not as an error.
func checkCancelled(t *testing.T, logs *logBuffer, base, requestID, route string) {
	t.Helper()
	rec := accessRecord(t, logs, requestID)
	if rec["status"] != float64(server.StatusClientClosedRequest) || rec["level"] != "INFO" {
		t.Errorf("access log %v, want level INFO and status 499", rec)
	}
	for _, msg := range []string{"request failed", "request shed: the store is busy"} {
		if recs := logs.records(t, msg); len(recs) > 0 {
			t.Errorf("the cancelled request was logged as %q: %v", msg, recs)
		}
	}
	values := parseMetrics(t, do(t, http.MethodGet, base+"/metrics", nil).body)
	for series, want := range map[string]float64{
		fmt.Sprintf(`h4r_requests_cancelled_total{route=%q}`, route):       1,
		fmt.Sprintf(`h4r_http_requests_total{code="499",route=%q}`, route): 1,
		`h4r_requests_rejected_total{reason="internal"}`:                   0,
		`h4r_requests_rejected_total{reason="unavailable"}`:                0,
		`h4r_requests_rejected_total{reason="cancelled"}`:                  0,
		`h4r_http_requests_total{code="500",route="` + route + `"}`:        0,
	} {
		if got := values[series]; got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}

// TestCancelledIngest is the regression test of a client that cancels an
// ingest while the store is writing it. The server logged it as a failure
// ("request failed", status 500: Postgres's "canceling statement due to
// user request", SQLite's context.Canceled) and counted it as an internal
// error. It is the client's doing: status 499 at info, counted apart, and
// the batch, cut off after its items were written on Postgres, is rolled
// back whole.
func TestCancelledIngest(t *testing.T) {
	const batch = `{"items": [
		{"id": "cancel-1", "kind": "note", "text": "a note the client cancelled", "links": [{"type": "relates_to", "target": "cancel-2"}]},
		{"id": "cancel-2", "kind": "note", "text": "another note of the cancelled batch"}]}`
	for _, st := range cancelStores() {
		t.Run(st.name, func(t *testing.T) {
			var logs logBuffer
			var write blocker
			s := newStackWith(t, func(c *config.Config) { write, _ = st.configure(t, c) }, server.WithLogger(jsonLogger(&logs)))
			base := s.serve(t)
			before, err := s.store.Count(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			release := write.hold(t)
			sendAndCancel(t, base+"/v1/items", "cancel-ingest", batch, write.waiting)
			checkCancelled(t, &logs, base, "cancel-ingest", "/v1/items")
			release()
			for _, id := range []string{"cancel-1", "cancel-2"} {
				if r := do(t, http.MethodGet, base+"/v1/items/"+url.PathEscape(id), nil); r.status != http.StatusNotFound {
					t.Errorf("item %s after the cancelled batch: status %d, want 404: %s", id, r.status, r.body)
				}
			}
			if after, err := s.store.Count(t.Context()); err != nil || after != before {
				t.Errorf("items after the cancelled batch: %d (%v), want %d", after, err, before)
			}
			// The store is not left stuck: the same batch goes in now.
			if r := post(t, base+"/v1/items", batch); r.status != http.StatusOK {
				t.Fatalf("the batch again: %d %s", r.status, r.body)
			}
		})
	}
}

// TestCancelledPack checks a context pack whose client went away while
// the store's read was stuck (Postgres): it was built as a degraded pack
// or failed as an internal error; it is a 499 at info and no delivered
// pack.
func TestCancelledPack(t *testing.T) {
	for _, st := range cancelStores() {
		t.Run(st.name, func(t *testing.T) {
			var logs logBuffer
			var read blocker
			s := newStackWith(t, func(c *config.Config) { _, read = st.configure(t, c) }, server.WithLogger(jsonLogger(&logs)))
			if read.hold == nil {
				t.Skip("SQLite readers cannot be held up; the cut-off body below covers this store")
			}
			base := s.serve(t)
			release := read.hold(t)
			defer release()
			sendAndCancel(t, base+"/v1/context-pack", "cancel-pack", `{"query": {"text": "login test failures"}}`, read.waiting)
			checkCancelled(t, &logs, base, "cancel-pack", "/v1/context-pack")
			values := parseMetrics(t, do(t, http.MethodGet, base+"/metrics", nil).body)
			if n := values[`context_packs_total{status="degraded"}`] + values[`context_packs_total{status="ok"}`]; n != 0 {
				t.Errorf("context_packs_total = %v, want 0: nobody received the pack", n)
			}
		})
	}
}

// TestCutOffBody checks a client that closes its connection in the middle
// of sending the body: the server's read of it fails with an unexpected
// EOF, which was logged as an internal error (500). It is the client
// closing the request: 499 at info, counted apart, nothing written.
func TestCutOffBody(t *testing.T) {
	for _, route := range []string{"/v1/items", "/v1/context-pack"} {
		t.Run(strings.TrimPrefix(route, "/v1/"), func(t *testing.T) {
			var logs logBuffer
			s := newStack(t, server.WithLogger(jsonLogger(&logs)))
			base := s.serve(t)
			before, err := s.store.Count(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(base)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", u.Host)
			if err != nil {
				t.Fatal(err)
			}
			part := `{"id": "cut-off", "kind": "note", "text": "the rest of this body never`
			if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nX-Request-Id: cut-off\r\nContent-Length: %d\r\n\r\n%s",
				route, u.Host, len(part)+100, part); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			checkCancelled(t, &logs, base, "cut-off", route)
			if after, err := s.store.Count(t.Context()); err != nil || after != before {
				t.Errorf("items after the cut-off body: %d (%v), want %d", after, err, before)
			}
		})
	}
}
