package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestGenerateIsReproducible(t *testing.T) {
	files := []string{"corpus.jsonl", "queries.jsonl", "qrels/test.tsv", MappingFile}
	gen := func(seed uint64) string {
		dir := t.TempDir()
		if err := Generate(dir, GenOptions{Seed: seed, PerCategory: 2, Noise: 2}); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b, c := gen(7), gen(7), gen(8)
	for _, f := range files {
		fa, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		fb, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(fa, fb) {
			t.Errorf("%s differs between two runs with seed 7", f)
		}
		fc, _ := os.ReadFile(filepath.Join(c, f))
		if f == "corpus.jsonl" && bytes.Equal(fa, fc) {
			t.Errorf("%s is the same for seeds 7 and 8", f)
		}
	}
}

// Every query of the synthetic set has one best answer in its own scope,
// and every category is there.
func TestGenerateGroundTruth(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir, GenOptions{Seed: 1, PerCategory: 3, Noise: 1}); err != nil {
		t.Fatal(err)
	}
	ds, err := LoadBEIR(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	scope := map[string]string{}
	for _, d := range ds.Docs {
		scope[d.ID] = d.Scope
	}
	perCat := map[string]int{}
	for _, q := range ds.Queries {
		perCat[q.Category]++
		best := 0
		for doc, g := range ds.Qrels[q.ID] {
			if scope[doc] != q.Scope {
				t.Errorf("%s: judged %s is in scope %q, not the query's %q", q.ID, doc, scope[doc], q.Scope)
			}
			if g == 2 {
				best++
			}
		}
		if best != 1 {
			t.Errorf("%s (%s): %d answers of grade 2, want 1", q.ID, q.Category, best)
		}
	}
	for _, c := range GenCategories() {
		if perCat[c] != 3 {
			t.Errorf("category %s has %d queries, want 3", c, perCat[c])
		}
	}
}
