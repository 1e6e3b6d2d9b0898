package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/h4r/h4r/internal/pgtest"
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
	vars := env(map[string]string{"DATABASE_URL": pgtest.Schema(t, "h4r_cmd_migrate_test"), "H4R_LOG_LEVEL": "warn"})

	// The latest version is the number of the last embedded migration.
	entries, err := os.ReadDir("../../store/postgres/migrations")
	if err != nil {
		t.Fatal(err)
	}
	latest := len(entries)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"first run", []string{"migrate"}, fmt.Sprintf("schema migrated from version 0 to %d\n", latest)},
		{"second run", []string{"migrate"}, fmt.Sprintf("schema already at version %d\n", latest)},
		{"refresh impacts", []string{"migrate", "--refresh-impacts"}, fmt.Sprintf("schema already at version %d\nBM25 impacts recomputed\n", latest)},
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
