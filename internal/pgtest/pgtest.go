package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Var names the variable that holds the test database's URL; .ci/run sets
// it.
const Var = "H4R_TEST_DATABASE_URL"

// DSN returns the test database's URL. Without one, or when the database
// does not answer, the test is skipped with a hint on how to enable it,
// except in CI (CI=true), where the Postgres tests must run: there both
// fail the test.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(Var)
	inCI := os.Getenv("CI") == "true"
	if dsn == "" {
		if inCI {
			t.Fatalf("%s is not set: CI must run the Postgres tests (.ci/run sets it)", Var)
		}
		t.Skipf("Postgres tests are off: set %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them", Var)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if inCI {
			t.Fatalf("the test database %s=%s is unreachable, and CI must run the Postgres tests: %v", Var, dsn, err)
		}
		t.Skipf("the test database %s=%s is unreachable (start Postgres, or unset %s): %v", Var, dsn, Var, err)
	}
	_ = conn.Close(ctx)
	return dsn
}

// Schema creates a schema of t's own (named prefix_ and random hex),
// dropped with everything in it when t ends, and returns a database URL
// whose search_path selects it. Tests in their own schemas can run in
// parallel and leave nothing behind.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	dsn := DSN(t)
	name := prefix + "_" + randomHex(t, 6)
	exec(t, dsn, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() { exec(t, dsn, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE") })
	return WithSearchPath(t, dsn, name)
}

// WithSearchPath adds search_path to a URL or key=value DSN.
func WithSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if !strings.Contains(dsn, "://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", Var, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// exec runs one statement on its own connection: a schema's cleanup must
// work after the test's own connections are gone.
func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("connecting to the test database for %q: %v", sql, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Errorf("%s: %v", sql, err)
	}
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
