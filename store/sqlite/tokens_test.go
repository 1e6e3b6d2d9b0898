package sqlite_test

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/sqlitetest"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

// Opening a store recounts the tokens of items counted with another
// encoding. A store whose items need no recount opens while another
// process holds the write lock (a server starting as the one before it
// finishes a write); one that needs a recount waits for the lock, fails
// with a clear error when it cannot have it, and recounts once it can.
func TestOpenRecountsTokensOnlyWhenNeeded(t *testing.T) {
	tests := []struct {
		name     string
		encoding string
		wantErr  string // "": opens while the lock is held
	}{
		{"every item counted with the store's encoding", tokens.CL100K, ""},
		{"items counted with another encoding", tokens.O200K, "recounting tokens with o200k_base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "h4r.db")
			first := openStore(t, path, tokens.CL100K)
			if _, err := first.Upsert(ctx, []h4r.Item{
				{ID: "a", Kind: "note", Text: "the deploy failed on the staging cluster"},
				{ID: "b", Kind: "note", Text: "rollback of release 4.2 finished"},
			}); err != nil {
				t.Fatal(err)
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}

			release := sqlitetest.HoldWriteLock(t, path)
			s, err := openWith(ctx, path, tt.encoding, sqlite.WithWriteTimeout(200*time.Millisecond))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("opening while another connection holds the write lock: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				release()
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("opened with items to recount while the write lock was held")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q does not say %q", err, tt.wantErr)
			}
			release()
			s, err = openWith(ctx, path, tt.encoding)
			if err != nil {
				t.Fatalf("opening once the lock is released: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n := countOtherEncodings(t, path, tt.encoding); n != 0 {
				t.Errorf("%d items still counted with another encoding than %s", n, tt.encoding)
			}
		})
	}
}

// openWith opens the store at path counting with encoding.
func openWith(ctx context.Context, path, encoding string, opts ...sqlite.Option) (*sqlite.Store, error) {
	counter, err := tokens.New(encoding)
	if err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, path, append([]sqlite.Option{sqlite.WithTokenCounter(counter), sqlite.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
}

// openStore is openWith that fails t on an error.
func openStore(t *testing.T, path, encoding string) *sqlite.Store {
	t.Helper()
	s, err := openWith(t.Context(), path, encoding)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countOtherEncodings counts the items of the store at path whose tokens
// were counted with another encoding than encoding.
func countOtherEncodings(t *testing.T, path, encoding string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM items WHERE token_encoding <> ?`, encoding).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
