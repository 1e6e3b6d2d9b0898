package sqlite

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/sqlitetest"
)

// tableCounts is what a write changes: every table's rows, as one string
// to compare.
func tableCounts(t *testing.T, s *Store) string {
	t.Helper()
	var out string
	err := s.readers.QueryRowContext(t.Context(), `SELECT format('items %d, tags %d, links %d, vectors %d, deleted %d, text generation %d',
		(SELECT count(*) FROM items), (SELECT count(*) FROM item_tags), (SELECT count(*) FROM links),
		(SELECT count(*) FROM item_vectors), (SELECT count(*) FROM deleted_versions),
		(SELECT generation FROM text_generation))`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A write past its deadline fails with unavailable (503 with Retry-After
// at the server), is rolled back, and leaves the writer to the next write;
// reads answer meanwhile from their own connections. The caller's own
// deadline stays the caller's.
func TestWritePastItsDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	holdWriter := func(t *testing.T, s *Store, _ string) func() {
		conn, err := s.writer.Conn(t.Context()) // the one writer connection, as a long write holds it
		if err != nil {
			t.Fatal(err)
		}
		return func() { conn.Close() }
	}
	tests := []struct {
		name string
		// block makes the next write wait; it returns the function that
		// ends the blockage.
		block    func(t *testing.T, s *Store, path string) func()
		write    func(ctx context.Context, s *Store) error
		ctx      func(t *testing.T) context.Context
		wantCode string
		absent   string // an id the write must not have left behind
	}{
		{
			name: "upsert waiting for the writer", block: holdWriter,
			write: upsertOne("late"), wantCode: h4r.EUNAVAILABLE, absent: "late",
		},
		{
			name: "delete waiting for the writer", block: holdWriter,
			write:    func(ctx context.Context, s *Store) error { return s.Delete(ctx, "seed") },
			wantCode: h4r.EUNAVAILABLE,
		},
		{
			name: "upsert waiting behind a vector write",
			block: func(t *testing.T, s *Store, _ string) func() {
				if err := s.vectors.writeMu.lock(t.Context()); err != nil {
					t.Fatal(err)
				}
				return s.vectors.writeMu.Unlock
			},
			write: upsertOne("late"), wantCode: h4r.EUNAVAILABLE, absent: "late",
		},
		{
			name:  "upsert waiting for another process's write lock",
			block: func(t *testing.T, _ *Store, path string) func() { return sqlitetest.HoldWriteLock(t, path) },
			write: upsertOne("late"), wantCode: h4r.EUNAVAILABLE, absent: "late",
		},
		{
			name: "the caller's deadline before the store's", block: holdWriter,
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
			e, err := embed.NewHash()
			if err != nil {
				t.Fatal(err)
			}
			s, path := newTestStore(t, WithWriteTimeout(deadline), WithVectors(e))
			seed := []h4r.Item{{ID: "seed", Text: "an item written before", Metadata: h4r.Metadata{Tags: []string{"t"}},
				Links: []h4r.Link{{Type: "caused_by", Target: "x"}}}}
			if _, err := s.Upsert(t.Context(), seed); err != nil {
				t.Fatal(err)
			}
			before := tableCounts(t, s)
			unblock := tt.block(t, s, path)
			ctx := t.Context()
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			err = tt.write(ctx, s)
			if it, rerr := s.Get(t.Context(), "seed"); rerr != nil || it.Text != seed[0].Text {
				t.Errorf("read while the writer is blocked: %v", rerr)
			}
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
			// Nothing stays locked: the next write lands.
			if _, err := s.Upsert(t.Context(), []h4r.Item{{ID: "next", Text: "after the failure"}}); err != nil {
				t.Fatalf("the next write failed: %v", err)
			}
		})
	}
}

func upsertOne(id string) func(ctx context.Context, s *Store) error {
	return func(ctx context.Context, s *Store) error {
		_, err := s.Upsert(ctx, []h4r.Item{{ID: id, Text: "written too late", Metadata: h4r.Metadata{Tags: []string{"late"}},
			Links: []h4r.Link{{Type: "caused_by", Target: "seed"}}}})
		return err
	}
}

// Writes queue for the one writer in order: with many writers at once and
// a deadline none of them reaches, every write lands (the lock is not
// lost or doubled by the deadline machinery).
func TestConcurrentWritesWithinTheDeadline(t *testing.T) {
	s, _ := newTestStore(t, WithWriteTimeout(time.Minute))
	const writers = 16
	errs := make(chan error, writers)
	for i := range writers {
		go func() {
			_, err := s.Upsert(t.Context(), []h4r.Item{{ID: fmt.Sprintf("w-%d", i), Text: "written concurrently"}})
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n, err := s.Count(t.Context()); err != nil || n != writers {
		t.Errorf("Count = %d, %v; want %d", n, err, writers)
	}
}

func TestWriteTimeoutRejected(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			_, err := Open(t.Context(), t.TempDir()+"/h4r.db", WithWriteTimeout(d))
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != "writeTimeout" {
				t.Fatalf("Open: %v, want invalid_argument for writeTimeout", err)
			}
		})
	}
}
