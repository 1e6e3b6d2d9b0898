package sqlite

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r/store/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", path, diffLines(string(want), got))
	}
}

// diffLines lists the lines only one side has.
func diffLines(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var sb strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&sb, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&sb, "+ %s\n", l)
		}
	}
	return sb.String()
}

// The schema the migrations build. A change here must come from a new
// migration, never from editing a released one.
func TestSchemaGolden(t *testing.T) {
	s, _ := newTestStore(t)
	rows, err := s.readers.QueryContext(t.Context(), `SELECT type, name, sql FROM sqlite_schema
		WHERE sql IS NOT NULL ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sb strings.Builder
	for rows.Next() {
		var typ, name, sql string
		if err := rows.Scan(&typ, &name, &sql); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "-- %s %s\n%s;\n\n", typ, name, sql)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	golden(t, "schema.golden.sql", sb.String())
}

// What MatchExpression makes of each nasty query.
func TestMatchExpressionGolden(t *testing.T) {
	var sb strings.Builder
	for _, q := range storetest.NastyQueries() {
		fmt.Fprintf(&sb, "%s\n\tin:  %q\n\tout: %s\n", q.Name, q.Text, MatchExpression(q.Text))
	}
	golden(t, "match_expressions.golden", sb.String())
}
