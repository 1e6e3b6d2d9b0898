package ingest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/jobs"
)

// synthRepo writes n small Go and Markdown files (one or two chunks each)
// in folders of 50.
func synthRepo(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	for i := range n {
		dir := fmt.Sprintf("pkg%03d", i/50)
		if i%2 == 0 {
			write(b, root, fmt.Sprintf("%s/f%05d.go", dir, i), fmt.Sprintf("package %s\n\n// F%d returns its number.\nfunc F%d() int { return %d }\n\n// G%d doubles it.\nfunc G%d() int { return 2 * %d }\n", dir, i, i, i, i, i, i))
		} else {
			write(b, root, fmt.Sprintf("%s/n%05d.md", dir, i), fmt.Sprintf("# Note %d\n\nThe budget of note %d is enforced by the slicer.\n\n## Details\n\nMore words about item %d.\n", i, i, i))
		}
	}
	return root
}

// BenchmarkIngestFirst measures a first ingest of 500 files into an empty
// store: files/s and chunks/s.
func BenchmarkIngestFirst(b *testing.B) {
	const files = 500
	var chunks int
	for b.Loop() {
		b.StopTimer()
		e := newEnv(b)
		root := synthRepo(b, files)
		in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
		b.StartTimer()
		var p jobs.Progress
		if err := in.Run(context.Background(), ingest.Source{Type: ingest.TypeFS, Path: root}, ingest.Options{}, &p, func(jobs.Progress) {}); err != nil {
			b.Fatal(err)
		}
		chunks = p.ChunksWritten
	}
	perOp := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(files/perOp, "files/s")
	b.ReportMetric(float64(chunks)/perOp, "chunks/s")
}

// BenchmarkReingestUnchanged5000 re-ingests an unchanged 5,000-file folder
// (listing, stat, index comparison; nothing read, nothing written), and
// BenchmarkReadIndex5000 only reads its file index: the first should be
// close to the second plus the folder walk.
func BenchmarkReingestUnchanged5000(b *testing.B) {
	in, root := ingested5000(b)
	for b.Loop() {
		var p jobs.Progress
		if err := in.Run(context.Background(), ingest.Source{Type: ingest.TypeFS, Path: root}, ingest.Options{}, &p, func(jobs.Progress) {}); err != nil {
			b.Fatal(err)
		}
		if p.FilesChanged != 0 || p.FilesUnchanged != 5000 {
			b.Fatalf("not unchanged: %+v", p)
		}
	}
}

func BenchmarkReadIndex5000(b *testing.B) {
	e := newEnv(b)
	for i := range 5000 {
		if err := e.index.PutFile(context.Background(), "src", jobs.FileState{Path: fmt.Sprintf("pkg%03d/f%05d.go", i/50, i), SHA: "0123456789012345678901234567890123456789", Size: 100, MTime: 1, Chunks: 2}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		m, err := e.index.Files(context.Background(), "src")
		if err != nil || len(m) != 5000 {
			b.Fatal(len(m), err)
		}
	}
}

func ingested5000(b *testing.B) (*ingest.Ingester, string) {
	b.Helper()
	e := newEnv(b)
	root := synthRepo(b, 5000)
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(filepath.Dir(root)))
	var p jobs.Progress
	if err := in.Run(context.Background(), ingest.Source{Type: ingest.TypeFS, Path: root}, ingest.Options{}, &p, func(jobs.Progress) {}); err != nil {
		b.Fatal(err)
	}
	if p.FilesChanged != 5000 {
		b.Fatalf("setup: %+v", p)
	}
	return in, root
}
