package config_test

import (
	"os"
	"strings"
	"testing"

	"github.com/h4r/h4r/config"
)

// TestReadmeListsEveryVariable keeps the README's configuration table in
// step with Vars: every variable has a row with its default, and the table
// names no variable that does not exist.
func TestReadmeListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // name → the row
	for _, line := range strings.Split(string(readme), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ = strings.Cut(name, "`")
			if strings.ToUpper(name) == name && strings.Contains(name, "_") {
				rows[name] = line
			}
		}
	}
	for _, v := range config.Vars() {
		row, ok := rows[v.Name]
		if !ok {
			t.Errorf("README has no row for %s", v.Name)
			continue
		}
		def := v.Default
		if def == "" {
			def = "(unset)"
		}
		if !strings.HasPrefix(row, "| `"+v.Name+"` | `"+def+"` |") {
			t.Errorf("README row for %s does not give the default %q:\n%s", v.Name, def, row)
		}
		delete(rows, v.Name)
	}
	for name := range rows {
		t.Errorf("README lists %s, which config.Vars does not know", name)
	}
}
