package sqlkit

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one numbered schema change. A migration, once released, is
// never edited: a change is a new file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// LoadMigrations reads every *.sql file in the root of fsys, ordered by
// version. Two files with one version are an error.
func LoadMigrations(fsys fs.FS) ([]Migration, error) {
	paths, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("listing migrations: %w", err)
	}
	var out []Migration
	for _, p := range paths {
		number, name, ok := strings.Cut(strings.TrimSuffix(path.Base(p), ".sql"), "_")
		version, err := strconv.Atoi(number)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration file %s: name must look like 0001_what.sql", p)
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", p, err)
		}
		out = append(out, Migration{Version: version, Name: name, SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share version %d", out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}
