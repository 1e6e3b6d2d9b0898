package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/chunk"
	"github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/jobs"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

type env struct {
	store *sqlite.Store
	index *jobs.SQLStore
	split *chunk.Splitter
}

func newEnv(t testing.TB) env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "h4r.db"), sqlite.WithTokenCounter(counter), sqlite.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	idx, err := jobs.OpenSQLite(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return env{st, idx, chunk.New(counter, chunk.WithMaxTokens(120))}
}

func write(t testing.TB, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const readme = "# Demo\n\nIntro.\n\n## Budgets\n\nBudgets are enforced by the [slicer](scs/slicer.go) in rank order.\n"

const slicerGo = `package scs

import "example.com/demo/pack"

// Slice enforces the token budget.
func Slice() int { return pack.Size }
`

// newRepo makes a git repository with a README, Go code, a fake secret,
// a binary file, a corrupted PDF, an ignored file and a symlink leaving it.
func newRepo(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "demo")
	outside = filepath.Join(base, "outside")
	write(t, outside, "secret.txt", "outside the root")
	write(t, root, "README.md", readme)
	write(t, root, "go.mod", "module example.com/demo\n\ngo 1.26\n")
	write(t, root, "scs/slicer.go", slicerGo)
	write(t, root, "pack/pack.go", "package pack\n\n// Size of a pack.\nconst Size = 3\n")
	write(t, root, ".env", "API_TOKEN=sk-FAKE-0123456789abcdef\n")
	write(t, root, "logo.png", "\x89PNG\r\n\x1a\n\x00\x00\x00binary")
	pdf, err := os.ReadFile("testdata/corrupted.pdf")
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "docs/broken.pdf", string(pdf))
	write(t, root, ".gitignore", "build/\n")
	write(t, root, "build/out.txt", "generated")
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(root, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"README.md", "go.mod", "scs/slicer.go", "pack/pack.go", ".gitignore"} {
		if _, err := wt.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit("init", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1e9, 0)}}); err != nil {
		t.Fatal(err)
	}
	return root, outside
}

func run(t *testing.T, in *ingest.Ingester, src ingest.Source, opts ingest.Options) jobs.Progress {
	t.Helper()
	var p jobs.Progress
	if err := in.Run(context.Background(), src, opts, &p, func(jobs.Progress) {}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestContentRulesBuiltAtFirstRun: New builds no content rules, so a
// server that never ingests does not hold them; the first run builds them
// and every later run shares that build, which flags a secret by its
// content. A rule set that cannot be built fails every run before any
// file is read, and nothing is written.
func TestContentRulesBuiltAtFirstRun(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	write(t, root, "notes.md", "# Deploy\n\nThe key is AKIAZ7VRSQ4TKKBLGPQX for now.\n")
	src := ingest.Source{Type: ingest.TypeFS, Path: root}

	builds := 0
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root), ingest.WithCountedContentRules(&builds, nil))
	if builds != 0 {
		t.Fatalf("New built the content rules %d times, want 0", builds)
	}
	if p := run(t, in, src, ingest.Options{}); p.ChunksWritten == 0 {
		t.Fatalf("first run wrote nothing: %+v", p)
	}
	write(t, root, "notes.md", "# Deploy\n\nThe key is AKIAZ7VRSQ4TKKBLGPQY now.\n")
	run(t, in, src, ingest.Options{})
	if builds != 1 {
		t.Errorf("two runs built the content rules %d times, want 1", builds)
	}
	flagged := 0
	err := e.store.Each(context.Background(), func(it *h4r.Item) error {
		if it.Metadata.HasCredentials {
			flagged++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if flagged == 0 {
		t.Error("the file holding a key is not flagged by its content")
	}

	failed := 0
	broken := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root),
		ingest.WithCountedContentRules(&failed, errors.New("rule 7 does not compile")))
	for range 2 {
		var p jobs.Progress
		err := broken.Run(context.Background(), src, ingest.Options{}, &p, func(jobs.Progress) {})
		if err == nil || !strings.Contains(err.Error(), "credential rules cannot be used") || !strings.Contains(err.Error(), "rule 7") {
			t.Errorf("a run with rules that cannot be built: err = %v", err)
		}
		if p.FilesSeen != 0 || p.ChunksWritten != 0 {
			t.Errorf("a run with rules that cannot be built read or wrote files: %+v", p)
		}
	}
	if failed != 1 {
		t.Errorf("the failed build ran %d times, want once", failed)
	}
}

func issuesOf(list []jobs.FileIssue) map[string]string {
	out := map[string]string{}
	for _, i := range list {
		out[i.Path] = i.Message
	}
	return out
}

func TestIngestGitWorktreeIncremental(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	root, _ := newRepo(t)
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(filepath.Dir(root)))
	src := ingest.Source{Type: ingest.TypeGit, Path: root}

	p := run(t, in, src, ingest.Options{})
	// README, go.mod, .gitignore, two Go files, .env (flagged) are written.
	if p.FilesChanged != 6 || p.ChunksWritten < 6 {
		t.Errorf("first run: %+v", p)
	}
	skips, errs := issuesOf(p.Skips), issuesOf(p.Errors)
	if !strings.Contains(skips["logo.png"], "binary") {
		t.Errorf("logo.png skip = %q", skips["logo.png"])
	}
	if !strings.Contains(errs["leak.txt"], "leaves the source's root") {
		t.Errorf("leak.txt error = %q", errs["leak.txt"])
	}
	if !strings.Contains(errs["docs/broken.pdf"], "PDF") {
		t.Errorf("broken.pdf error = %q", errs["docs/broken.pdf"])
	}
	if _, ok := skips["build/out.txt"]; ok {
		t.Error("an ignored file was considered")
	}

	// Find the README's Budgets chunk with its citation metadata and links.
	var budget *h4r.Item
	var env *h4r.Item
	err := e.store.Each(ctx, func(it *h4r.Item) error {
		if it.Kind == ingest.KindChunk && strings.Contains(it.Text, "Budgets are enforced") {
			budget = it
		}
		if it.Kind == ingest.KindChunk && it.Metadata.Extra["path"] == ".env" {
			env = it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if budget == nil {
		t.Fatal("no chunk holds the README's Budgets section")
	}
	if !strings.HasPrefix(budget.Text, "demo: README.md › Demo › Budgets\n\n") {
		t.Errorf("contextual text = %q", budget.Text)
	}
	if budget.Content["text"] != "## Budgets\n\nBudgets are enforced by the [slicer](scs/slicer.go) in rank order." {
		t.Errorf("raw content = %q", budget.Content["text"])
	}
	m := budget.Metadata.Extra
	if m["path"] != "README.md" || m["source_type"] != "git" || m["repo"] != "demo" || len(m["sha"].(string)) != 40 {
		t.Errorf("metadata = %v", m)
	}
	if lr, _ := m["line_range"].([]any); len(lr) != 2 || lr[0] != float64(5) || lr[1] != float64(7) {
		t.Errorf("line_range = %v, want [5 7]", m["line_range"])
	}
	var links []string
	for _, l := range budget.Links {
		links = append(links, l.Type+"→"+l.Target[strings.LastIndex(l.Target, ":")+1:])
	}
	if strings.Join(links, ",") != "follows→README.md#0,references→scs/slicer.go" {
		t.Errorf("links = %v", links)
	}
	if env == nil || !env.Metadata.HasCredentials {
		t.Errorf("the .env chunk is not flagged hasCredentials: %+v", env)
	}

	// Unchanged: nothing written, and the progress says so.
	p = run(t, in, src, ingest.Options{})
	if p.FilesChanged != 0 || p.ChunksWritten != 0 || p.FilesUnchanged != 6 || p.ChunksDeleted != 0 {
		t.Errorf("unchanged re-run: %+v", p)
	}
	// One file edited: only it is re-chunked.
	write(t, root, "scs/slicer.go", slicerGo+"\n// Other is new.\nfunc Other() {}\n")
	p = run(t, in, src, ingest.Options{})
	if p.FilesChanged != 1 || p.FilesUnchanged != 5 {
		t.Errorf("after one edit: %+v", p)
	}
	// A shrunk file loses its extra chunks; a deleted file loses all.
	write(t, root, "README.md", "# Demo\n")
	if err := os.Remove(filepath.Join(root, "pack", "pack.go")); err != nil {
		t.Fatal(err)
	}
	p = run(t, in, src, ingest.Options{})
	if p.FilesChanged != 1 || p.FilesDeleted != 1 || p.ChunksDeleted < 2 {
		t.Errorf("after shrink and delete: %+v", p)
	}
	var left []string
	_ = e.store.Each(ctx, func(it *h4r.Item) error {
		if p, _ := it.Metadata.Extra["path"].(string); p == "README.md" || p == "pack/pack.go" {
			left = append(left, it.ID[strings.LastIndex(it.ID, ":")+1:])
		}
		return nil
	})
	slices.Sort(left)
	if strings.Join(left, ",") != "README.md,README.md#0" {
		t.Errorf("items of README.md and pack/pack.go left: %v", left)
	}
}

func TestIngestGitRef(t *testing.T) {
	e := newEnv(t)
	root, _ := newRepo(t)
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	// The committed tree: five files, blob shas from git; the untracked
	// .env and the rest are not in it.
	p := run(t, in, ingest.Source{Type: ingest.TypeGit, Path: root, Ref: "HEAD"}, ingest.Options{})
	if p.FilesChanged != 5 || len(p.Errors) != 0 {
		t.Errorf("HEAD: %+v", p)
	}
	p = run(t, in, ingest.Source{Type: ingest.TypeGit, Path: root, Ref: "HEAD"}, ingest.Options{})
	if p.FilesUnchanged != 5 || p.ChunksWritten != 0 {
		t.Errorf("HEAD again: %+v", p)
	}
	var herr *h4r.Error
	err := in.Run(context.Background(), ingest.Source{Type: ingest.TypeGit, Path: root, Ref: "nope"}, ingest.Options{}, &jobs.Progress{}, func(jobs.Progress) {})
	if !errors.As(err, &herr) || herr.Field != "ref" {
		t.Errorf("unknown ref: %v", err)
	}
}

func TestIngestRefusals(t *testing.T) {
	e := newEnv(t)
	root, outside := newRepo(t)
	ctx := context.Background()
	cases := []struct {
		name  string
		in    *ingest.Ingester
		src   ingest.Source
		code  string
		field string
	}{
		{"outside the roots", ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root)), ingest.Source{Type: ingest.TypeFS, Path: outside}, h4r.EFORBIDDEN, "path"},
		{"no roots configured", ingest.New(e.store, e.index, e.split), ingest.Source{Type: ingest.TypeFS, Path: root}, h4r.EFORBIDDEN, "path"},
		{"dot-dot escape", ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root)), ingest.Source{Type: ingest.TypeFS, Path: root + "/../outside"}, h4r.EFORBIDDEN, "path"},
		{"private url", ingest.New(e.store, e.index, e.split), ingest.Source{Type: ingest.TypeURL, URI: "ftp://x"}, h4r.EINVALID, "uri"},
		{"unknown type", ingest.New(e.store, e.index, e.split), ingest.Source{Type: "svn", Path: root}, h4r.EINVALID, "source.type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.in.Run(ctx, c.src, ingest.Options{}, &jobs.Progress{}, func(jobs.Progress) {})
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Code != c.code || herr.Field != c.field {
				t.Errorf("err = %v, want %s on %s", err, c.code, c.field)
			}
		})
	}
}

func TestIngestCredentialSkipAndSizeLimit(t *testing.T) {
	e := newEnv(t)
	root, _ := newRepo(t)
	write(t, root, "big.txt", strings.Repeat("x", 5000))
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root),
		ingest.WithCredentialMode(ingest.CredentialsSkip), ingest.WithMaxFileBytes(4096))
	p := run(t, in, ingest.Source{Type: ingest.TypeFS, Path: root}, ingest.Options{})
	skips := issuesOf(p.Skips)
	if !strings.Contains(skips[".env"], "credential") || !strings.Contains(skips["big.txt"], "limit") {
		t.Errorf("skips = %v", skips)
	}
}

func TestIngestURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<html><body><h1>Runbook</h1><p>Restart the <b>slicer</b> first.</p><script>evil()</script></body></html>"))
	}))
	defer srv.Close()
	e := newEnv(t)
	ctx := context.Background()
	// Loopback is private: refused by default, with the file's error.
	in := ingest.New(e.store, e.index, e.split)
	p := run(t, in, ingest.Source{Type: ingest.TypeURL, URI: srv.URL + "/runbook"}, ingest.Options{})
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "private") || p.ChunksWritten != 0 {
		t.Fatalf("private URL: %+v", p)
	}
	in = ingest.New(e.store, e.index, e.split, ingest.WithPrivateURLs(true))
	p = run(t, in, ingest.Source{Type: ingest.TypeURL, URI: srv.URL + "/runbook"}, ingest.Options{})
	if p.ChunksWritten != 1 {
		t.Fatalf("allowed URL: %+v", p)
	}
	var got *h4r.Item
	_ = e.store.Each(ctx, func(it *h4r.Item) error {
		if it.Kind == ingest.KindChunk {
			got = it
		}
		return nil
	})
	if got == nil || got.Metadata.Extra["url"] != srv.URL+"/runbook" || !strings.Contains(got.Content["text"].(string), "Restart the **slicer** first.") ||
		strings.Contains(got.Text, "evil") {
		t.Errorf("page chunk = %+v", got)
	}
}

func TestIngestDoc(t *testing.T) {
	e := newEnv(t)
	root, _ := newRepo(t)
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	p := run(t, in, ingest.Source{Type: ingest.TypeDoc, Path: filepath.Join(root, "README.md")}, ingest.Options{})
	if p.FilesChanged != 1 || p.ChunksWritten != 2 {
		t.Errorf("doc: %+v", p)
	}
	p = run(t, in, ingest.Source{Type: ingest.TypeDoc, Path: filepath.Join(root, "docs", "broken.pdf")}, ingest.Options{})
	if len(p.Errors) != 1 || !strings.Contains(p.Errors[0].Message, "PDF") {
		t.Errorf("corrupted PDF: %+v", p)
	}
	var herr *h4r.Error
	err := in.Run(context.Background(), ingest.Source{Type: ingest.TypeDoc, Path: filepath.Join(root, "docs")}, ingest.Options{}, &jobs.Progress{}, func(jobs.Progress) {})
	if !errors.As(err, &herr) || herr.Field != "path" {
		t.Errorf("a folder as a doc: %v", err)
	}
}

func TestIngestSourceDefaultMetadata(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	root, _ := newRepo(t)
	in := ingest.New(e.store, e.index, e.split, ingest.WithAllowedRoots(root))
	sens, trust := 0.8, 0.4
	src := ingest.Source{Type: ingest.TypeDoc, Path: filepath.Join(root, "README.md"),
		Metadata: &ingest.Defaults{Sensitivity: &sens, Trust: &trust, RestrictedToGroups: []string{"dev"}}}
	run(t, in, src, ingest.Options{})
	n := 0
	err := e.store.Each(ctx, func(it *h4r.Item) error {
		m := it.Metadata
		if m.SensitivityValue() != 0.8 || m.TrustValue() != 0.4 || strings.Join(m.RestrictedToGroups, ",") != "dev" {
			t.Errorf("%s: sensitivity %v trust %v groups %v", it.ID, m.SensitivityValue(), m.TrustValue(), m.RestrictedToGroups)
		}
		n++
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("%d items, %v", n, err)
	}
	bad := 1.5
	src.Metadata.Trust = &bad
	var herr *h4r.Error
	if err := in.Run(ctx, src, ingest.Options{}, &jobs.Progress{}, func(jobs.Progress) {}); !errors.As(err, &herr) || herr.Field != "source.metadata.trust" {
		t.Errorf("trust 1.5: %v", err)
	}
}

// refusingDeletes is the store with Delete failing as a database would:
// a shrunk file whose surplus chunks went in a second step after its new
// chunks were written would be left half replaced.
type refusingDeletes struct{ *sqlite.Store }

func (refusingDeletes) Delete(context.Context, string) error {
	return errors.New("the database refused the delete")
}

// A changed file's new chunks and the deletion of its surplus old ones
// are one write: no step exists in which the store holds the new chunks
// beside old surplus ones, so a failure between two steps cannot leave
// them. (Before, the surplus went by Delete after the upsert.)
func TestChangedFileReplacesChunksAtomically(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	root := filepath.Join(t.TempDir(), "notes")
	var long strings.Builder
	for i := range 12 {
		fmt.Fprintf(&long, "## Part %d\n\nOld walrus paragraph %d, long enough that the parts do not fit one chunk of 120 tokens together.\n\n", i, i)
	}
	write(t, root, "notes.md", long.String())
	in := ingest.New(refusingDeletes{e.store}, e.index, e.split, ingest.WithAllowedRoots(filepath.Dir(root)))
	src := ingest.Source{Type: ingest.TypeFS, Path: root}
	if p := run(t, in, src, ingest.Options{}); p.ChunksWritten < 3 {
		t.Fatalf("the long file made %d chunks, want at least 3: %+v", p.ChunksWritten, p)
	}

	write(t, root, "notes.md", "# Notes\n\nNew narwhal text.\n")
	var p jobs.Progress
	if err := in.Run(ctx, src, ingest.Options{}, &p, func(jobs.Progress) {}); err != nil {
		t.Fatalf("re-ingesting the shrunk file: %v", err)
	}
	if p.FilesChanged != 1 || p.ChunksWritten != 1 || p.ChunksDeleted < 2 {
		t.Errorf("after the shrink: %+v", p)
	}
	var chunks []string
	err := e.store.Each(ctx, func(it *h4r.Item) error {
		if it.Kind == "chunk" {
			chunks = append(chunks, it.ID[strings.LastIndex(it.ID, ":")+1:]+" "+it.Text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 1 || !strings.Contains(chunks[0], "narwhal") {
		t.Errorf("chunks after the shrink: %q, want the one new chunk", chunks)
	}
}
