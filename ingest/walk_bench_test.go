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
	r, err := os.OpenRoot(root)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		files, _, err := listDir(context.Background(), r)
		if err != nil || len(files) != 5000 {
			b.Fatal(len(files), err)
		}
	}
}

// BenchmarkCredentialMatch5000 tests the 5,000 paths of an unchanged
// re-ingest against the default credential patterns: path.Match on each
// pattern, as before, and the credMatcher that replaced it.
func BenchmarkCredentialMatch5000(b *testing.B) {
	paths := make([]string, 5000)
	for i := range paths {
		paths[i] = fmt.Sprintf("pkg%03d/f%05d.go", i/50, i)
	}
	b.Run("path.Match", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				if matchCredentialSlow(DefaultCredentialPatterns, p) {
					b.Fatal(p)
				}
			}
		}
	})
	b.Run("credMatcher", func(b *testing.B) {
		m := newCredMatcher(DefaultCredentialPatterns)
		for b.Loop() {
			for _, p := range paths {
				if m.match(p) {
					b.Fatal(p)
				}
			}
		}
	})
}
