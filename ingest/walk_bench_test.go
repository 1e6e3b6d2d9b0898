package ingest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkListDir5000 lists a 5,000-file folder as a re-ingest does
// (walk, .gitignore, stat): with BenchmarkReadIndex5000, what an unchanged
// re-ingest cannot avoid.
func BenchmarkListDir5000(b *testing.B) {
	root := b.TempDir()
	for i := range 5000 {
		p := filepath.Join(root, fmt.Sprintf("pkg%03d", i/50), fmt.Sprintf("f%05d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package x\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		files, _, err := listDir(context.Background(), root)
		if err != nil || len(files) != 5000 {
			b.Fatal(len(files), err)
		}
	}
}
