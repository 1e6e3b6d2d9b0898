package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r/tokens"
)

// testDSNVar names the variable that holds the test database's URL; .ci/run
// sets it.
const testDSNVar = "H4R_TEST_DATABASE_URL"

var testCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// testDSN returns the test database's URL. Without one the test is skipped,
// saying how to enable it, except in CI (CI=true), where the Postgres tests
// must run: there a missing or unreachable database fails the test.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(testDSNVar)
	inCI := os.Getenv("CI") == "true"
	if dsn == "" {
		if inCI {
			t.Fatalf("%s is not set: CI must run the Postgres tests (.ci/run sets it)", testDSNVar)
		}
		t.Skipf("Postgres tests are off: set %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them", testDSNVar)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if inCI {
			t.Fatalf("the test database %s=%s is unreachable, and CI must run the Postgres tests: %v", testDSNVar, dsn, err)
		}
		t.Skipf("the test database %s=%s is unreachable (start Postgres, or unset %s): %v", testDSNVar, dsn, testDSNVar, err)
	}
	conn.Close(ctx)
	return dsn
}

// adminConn connects to the test database as given, outside any test
// schema, and closes the connection when t ends.
func adminConn(t testing.TB) *pgx.Conn {
	t.Helper()
	dsn := testDSN(t)
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// newSchema creates a schema of its own for t, dropped with everything in
// it when t ends, and returns a database URL whose search_path selects it.
// Tests in their own schemas run in parallel and leave nothing behind.
func newSchema(t testing.TB) string {
	t.Helper()
	dsn := testDSN(t)
	conn := adminConn(t)
	name := "h4r_test_" + randomHex(t, 6)
	if _, err := conn.Exec(context.Background(), "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("creating schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return withSearchPath(t, dsn, name)
}

// withSearchPath adds search_path to a URL or key=value DSN.
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", testDSNVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
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
	base := []Option{WithTokenCounter(counter), WithLogger(quietLogger()), WithMaxConns(4)}
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
