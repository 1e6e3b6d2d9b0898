package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/h4r/h4r/app"
	ingestion "github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/jobs"
)

// cmdIngestSource ingests a folder, git repository, document or page
// (h4r ingest-source PATH|URL) as a recorded job, drawing its progress.
// The path given is allowed whatever H4R_INGEST_ROOTS says: the roots
// protect the server from its callers, and the CLI's user already reads
// the path.
func cmdIngestSource(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("ingest-source", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `ingest-source PATH|URL [flags]`)
	fs.StringVar(&cfg.DataDir, "data-dir", cfg.DataDir, "directory of the embedded store (H4R_DATA_DIR)")
	typ := fs.String("type", "", "source type: git, fs, url or doc (default: url for http(s), git for a repository, doc for a file, else fs)")
	ref := fs.String("ref", "", "git: read this branch, tag or sha (HEAD: the last commit) instead of the working tree")
	rechunk := fs.Bool("rechunk", false, "re-chunk files whose content is unchanged too")
	var sens, trust float64
	fs.Float64Var(&sens, "sensitivity", -1, "metadata.sensitivity of every item (0..1)")
	fs.Float64Var(&trust, "trust", -1, "metadata.trust of every item (0..1)")
	groups := fs.String("groups", "", "comma-separated restrictedToGroups of every item")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"ingest-source takes one PATH or URL"}
	}
	src := ingestion.Source{Type: *typ, Ref: *ref}
	target := pos[0]
	isURL := strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://")
	if src.Type == "" {
		src.Type = detectType(target, isURL)
	}
	if isURL {
		src.URI = target
	} else {
		src.Path = target
	}
	if sens >= 0 || trust >= 0 || *groups != "" {
		src.Metadata = &ingestion.Defaults{}
		if sens >= 0 {
			src.Metadata.Sensitivity = &sens
		}
		if trust >= 0 {
			src.Metadata.Trust = &trust
		}
		for _, g := range strings.Split(*groups, ",") {
			if g = strings.TrimSpace(g); g != "" {
				src.Metadata.RestrictedToGroups = append(src.Metadata.RestrictedToGroups, g)
			}
		}
	}
	log := cfg.Logger(stderr)
	a, err := openApp(ctx, cfg, app.WithLogger(log))
	if err != nil {
		return err
	}
	defer a.Close()
	var opts []app.IngestOption
	if !isURL {
		root := target
		if src.Type == ingestion.TypeDoc {
			root = filepath.Dir(target)
		}
		opts = append(opts, app.WithIngestRoots(root))
	}
	jb, err := app.OpenJobs(ctx, a, log, opts...)
	if err != nil {
		return err
	}
	defer jb.Close()
	j, err := jb.StartIngest(ctx, "", ingestion.Request{Sources: []ingestion.Source{src}, Opts: ingestion.Options{Rechunk: *rechunk}})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "job %s: ingesting %s source %s\n", j.ID, src.Type, target)
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	var last jobs.Progress
	for {
		cur, err := jb.Get(ctx, j.ID)
		if err != nil {
			return err
		}
		if p := cur.Progress; p.FilesSeen != last.FilesSeen || p.FilesTotal != last.FilesTotal || len(p.Errors) != len(last.Errors) {
			drawProgress(stderr, p)
			last = p
		}
		if cur.State == jobs.StateSucceeded || cur.State == jobs.StateFailed {
			fmt.Fprintln(stderr)
			return reportJob(stdout, cur)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// detectType picks a source type for a CLI argument.
func detectType(target string, isURL bool) string {
	if isURL {
		if strings.HasSuffix(target, ".git") {
			return ingestion.TypeGit
		}
		return ingestion.TypeURL
	}
	info, err := os.Stat(target)
	if err != nil || !info.IsDir() {
		return ingestion.TypeDoc
	}
	if _, err := os.Stat(filepath.Join(target, ".git")); err == nil {
		return ingestion.TypeGit
	}
	return ingestion.TypeFS
}

// drawProgress draws one line: a bar of files seen over files listed, and
// the counts.
func drawProgress(w io.Writer, p jobs.Progress) {
	const width = 30
	bar := strings.Repeat("·", width)
	if p.FilesTotal > 0 {
		done := min(width, p.FilesSeen*width/p.FilesTotal)
		bar = strings.Repeat("█", done) + strings.Repeat("·", width-done)
	}
	fmt.Fprintf(w, "\r[%s] %d/%d files, %d changed, %d chunks written, %d skipped, %d errors ",
		bar, p.FilesSeen, p.FilesTotal, p.FilesChanged, p.ChunksWritten, p.Skipped, len(p.Errors))
}

// reportJob prints a finished job's summary, skips and errors.
func reportJob(w io.Writer, j jobs.Job) error {
	p := j.Progress
	fmt.Fprintf(w, "%s: %d files seen, %d changed, %d unchanged, %d deleted; %d chunks written, %d deleted; %d skipped\n",
		j.ID, p.FilesSeen, p.FilesChanged, p.FilesUnchanged, p.FilesDeleted, p.ChunksWritten, p.ChunksDeleted, p.Skipped)
	if p.Message != "" {
		fmt.Fprintln(w, p.Message)
	}
	for _, s := range p.Skips {
		fmt.Fprintf(w, "skipped %s: %s\n", s.Path, s.Message)
	}
	for _, e := range p.Errors {
		fmt.Fprintf(w, "error %s: %s\n", e.Path, e.Message)
	}
	if j.State == jobs.StateFailed {
		return fmt.Errorf("ingestion failed: %s", j.Error)
	}
	return nil
}
