package embed_test

import (
	"cmp"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/ golden files")

// The hashing embedder's vectors are stored (SQLite, Qdrant) and compared
// with query vectors made later, maybe by a newer binary: a change to the
// hashing that keeps the model name would silently mismatch them. This
// golden pins the model name and each text's strongest dimensions; a
// deliberate change bumps hashModelVersion and rewrites it with -update.
func TestHashGolden(t *testing.T) {
	h := newHash(t)
	var sb strings.Builder
	fmt.Fprintf(&sb, "model %s\n", h.Model())
	for _, text := range []string{
		"login test failures with selector issues",
		"optimize the query optimizer",
		"Ünïcödé wörds, digits 404 and CamelCase",
		"the of and",
	} {
		v := h.Vector(text)
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			if c := cmp.Compare(math.Abs(float64(v[b])), math.Abs(float64(v[a]))); c != 0 {
				return c
			}
			return a - b
		})
		fmt.Fprintf(&sb, "%q:", text)
		for _, i := range idx[:8] {
			if v[i] != 0 {
				fmt.Fprintf(&sb, " %d:%+.4f", i, v[i])
			}
		}
		sb.WriteString("\n")
	}
	path := filepath.Join("testdata", "hash.golden")
	if *update {
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if sb.String() != string(want) {
		t.Errorf("hash vectors changed: bump hashModelVersion, then go test -update\ngot:\n%s\nwant:\n%s", sb.String(), want)
	}
}
