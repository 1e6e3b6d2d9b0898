package bench_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r/bench"
)

// sharedDatasets is where the labelled collections live, beside the
// project; they are never copied into it.
const sharedDatasets = "../../shared/datasets"

func TestLoadBEIRSharedDatasets(t *testing.T) {
	tests := []struct {
		name                string
		docs, queries, rels int
	}{
		// Counts from shared/datasets/README.md.
		{"scifact", 5183, 300, 339},
		{"cisi", 1460, 76, 3114},
		{"cranfield", 1400, 225, 1612},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := bench.LoadBEIR(filepath.Join(sharedDatasets, tt.name), "test")
			if errors.Is(err, fs.ErrNotExist) {
				t.Skipf("%s is not beside the project (%v)", tt.name, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			rels := 0
			for _, j := range ds.Qrels {
				rels += len(j)
			}
			if len(ds.Docs) != tt.docs || len(ds.Queries) != tt.queries || rels != tt.rels {
				t.Errorf("%d docs, %d judged queries, %d judgments; want %d, %d, %d", len(ds.Docs), len(ds.Queries), rels, tt.docs, tt.queries, tt.rels)
			}
			for _, it := range ds.Items() {
				if err := it.Validate(""); err != nil {
					t.Fatalf("document %s does not make a valid item: %v", it.ID, err)
				}
			}
		})
	}
}
