package main

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMigrateWithoutDatabaseURL(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"migrate"}, nil, &out, &errOut, env(nil))
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("migrate without DATABASE_URL: %v, want a usage error naming DATABASE_URL", err)
	}
}

// migrate applies the schema once; run again, it has nothing to do.
func TestMigrateTwice(t *testing.T) {
	dsn := os.Getenv("H4R_TEST_DATABASE_URL")
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("H4R_TEST_DATABASE_URL is not set: CI must run the Postgres tests (.ci/run sets it)")
		}
		t.Skip("Postgres tests are off: set H4R_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable to run them")
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connecting to the test database: %v", err)
	}
	const schema = "h4r_cmd_migrate_test"
	if _, err := conn.Exec(t.Context(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE; CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
		conn.Close(context.Background())
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	vars := env(map[string]string{"DATABASE_URL": u.String(), "H4R_LOG_LEVEL": "warn"})

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"first run", []string{"migrate"}, "schema migrated from version 0 to 1\n"},
		{"second run", []string{"migrate"}, "schema already at version 1\n"},
		{"refresh impacts", []string{"migrate", "--refresh-impacts"}, "schema already at version 1\nBM25 impacts recomputed\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(t.Context(), tt.args, nil, &out, &errOut, vars); err != nil {
				t.Fatalf("%v: %v\n%s", tt.args, err, errOut.String())
			}
			if out.String() != tt.want {
				t.Errorf("output %q, want %q", out.String(), tt.want)
			}
		})
	}
}
