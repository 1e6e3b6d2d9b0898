package main

import (
	"bytes"
	"errors"
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
