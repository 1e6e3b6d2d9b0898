package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/tokens"
)

var testCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// The test database helpers are pgtest's, shared by every Postgres test.
var (
	testDSN        = pgtest.DSN
	withSearchPath = pgtest.WithSearchPath
)

// newSchema gives t a schema of its own (pgtest.Schema).
func newSchema(t testing.TB) string { return pgtest.Schema(t, "h4r_test") }

// adminConn connects to the test database as given, outside any test
// schema, and closes the connection when t ends.
func adminConn(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testDSN(t))
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// openAt opens a store over dsn and closes it when t ends.
func openAt(t testing.TB, dsn string, opts ...Option) *Store {
	t.Helper()
	counter, err := testCounter()
	if err != nil {
		t.Fatal(err)
	}
	base := []Option{WithTokenCounter(counter), WithLogger(quietLogger()), WithMaxReadConns(4), WithMaxWriteConns(2),
		WithWriteTimeout(time.Minute)} // no write deadline in the way of tests on a loaded machine, unless a test sets one
	s, err := Open(context.Background(), dsn, append(base, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// newStore opens a store in a schema of its own.
func newStore(t testing.TB, opts ...Option) *Store {
	t.Helper()
	return openAt(t, newSchema(t), opts...)
}

func mustSub(t testing.TB) fs.FS {
	t.Helper()
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	return sub
}
