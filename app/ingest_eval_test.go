package app_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	ingestion "github.com/h4r/h4r/ingest"
)

// evalQuestion is a question about this repository with the places that
// answer it: a file and a line of it (found by an anchor string, so the
// labels follow edits). A result answers when it is a chunk of that file
// whose line range holds that line.
type evalQuestion struct {
	q      string
	labels [][2]string // {path, anchor}
}

var evalSet = []evalQuestion{
	{"how are budgets enforced?", [][2]string{{"scs/slicer.go", "func (s *Slicer) Slice("}, {"docs/concepts.md", "Budgets are walked in rank order"}}},
	{"how does recency decay with an item's age?", [][2]string{{"rank/rank.go", "func recency("}}},
	{"rate limit of requests per API key", [][2]string{{"auth/limit.go", "func (l *Limiter) Allow("}}},
	{"embedding text without a model by feature hashing", [][2]string{{"embed/hash.go", "func (h *Hash) Vector("}}},
	{"how is a full-text query turned into an FTS5 match expression?", [][2]string{{"store/sqlite/fulltext.go", "func MatchExpression("}}},
	{"how is the TL;DR summary of a pack built?", [][2]string{{"pack/tldr.go", "func summarize("}}},
	{"reciprocal rank fusion of the text generators", [][2]string{{"rank/fusion.go", "func (f Fusion) fuseRRF("}}},
	{"what makes an ingested item invalid?", [][2]string{{"item.go", "func (it *Item) Validate("}}},
	{"what happens to an item's version when it is deleted?", [][2]string{{"store/sqlite/items.go", "func (s *Store) Delete("}, {"docs/api.md", "The store maintains `version`"}}},
	{"why does delivering an item in a pack not count as an access?", [][2]string{{"docs/concepts.md", "Frequency measures use, not delivery"}}},
	{"which API key class may call a route?", [][2]string{{"server/routes.go", "func (s *Server) accessOf("}}},
	{"how are the OpenAPI description files merged?", [][2]string{{"server/openapi.go", "func openAPIDocument("}}},
	{"what is the shape of an error response and its HTTP status?", [][2]string{{"docs/api.md", "Every error has one shape"}, {"server/status.go", "func HTTPStatus"}}},
	{"how are JSONPath redactions applied to an item?", [][2]string{{"scs/redact.go", "func Redact("}}},
	{"loading API keys from a file", [][2]string{{"auth/keys.go", "func Load("}}},
	{"the table of environment variables and their defaults", [][2]string{{"config/vars.go", "func table()"}}},
}

// copyCorpus copies this repository's Markdown and non-test Go files
// (not testdata, not this evaluation) to dst, and returns the line of
// each label's anchor.
func copyCorpus(t *testing.T, dst string) map[[2]string]int {
	t.Helper()
	root := ".."
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if name == ".git" || name == "testdata" || name == "data" || (strings.HasPrefix(name, ".") && p != root) {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, "_test.go") || !(strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".md")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := map[[2]string]int{}
	for _, q := range evalSet {
		for _, l := range q.labels {
			b, err := os.ReadFile(filepath.Join(dst, l[0]))
			if err != nil {
				t.Fatal(err)
			}
			i := strings.Index(string(b), l[1])
			if i < 0 {
				t.Fatalf("label anchor %q is not in %s: update the evaluation set", l[1], l[0])
			}
			lines[l] = strings.Count(string(b[:i]), "\n") + 1
		}
	}
	return lines
}

// TestContextualPrefixRetrieval measures Hit@5 and MRR@10 of chunk
// retrieval on the set above, full-text and hybrid, with and without the
// contextual prefix. It ingests the repository twice (about a minute), so
// it runs only with H4R_SOURCES_EVAL=1; it reports, it does not judge.
func TestContextualPrefixRetrieval(t *testing.T) {
	if os.Getenv("H4R_SOURCES_EVAL") == "" {
		t.Skip("a measurement (ingests the repository twice): set H4R_SOURCES_EVAL=1 to run it")
	}
	ctx := context.Background()
	corpus := t.TempDir()
	lines := copyCorpus(t, corpus)
	for _, prefix := range []bool{false, true} {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		// The hashing embedder and its fusion settings, which the documented figures were measured with.
		cfg.Embedder, cfg.FusionVector, cfg.VectorCandidates = "hash", 0.1, 20
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		a, err := app.Open(ctx, cfg, app.WithLogger(log))
		if err != nil {
			t.Fatal(err)
		}
		jb, err := app.OpenJobs(ctx, a, log, app.WithIngestRoots(corpus), app.WithContextualPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		j, err := jb.StartIngest(ctx, "", ingestion.Request{Sources: []ingestion.Source{{Type: ingestion.TypeFS, Path: corpus}}})
		if err != nil {
			t.Fatal(err)
		}
		jb.Runner.Wait()
		if done, _ := jb.Get(ctx, j.ID); done.State != "succeeded" {
			t.Fatalf("ingest: %+v", done)
		}
		for _, mode := range []h4r.QueryType{h4r.QueryKeyword, h4r.QueryHybrid} {
			var hits, rr float64
			for _, q := range evalSet {
				req := h4r.ContextRequest{Query: h4r.Query{Type: mode, Text: q.q, Filters: map[string]any{"kind": "chunk"}}, Limit: 10}
				plan, err := req.Plan("")
				if err != nil {
					t.Fatal(err)
				}
				pack, err := a.Engine.Run(ctx, h4r.Specialist{ID: "eval", SecurityLevel: h4r.Restricted}, plan)
				if err != nil {
					t.Fatal(err)
				}
				for rank, r := range pack.Results {
					c := r.Citation
					if c == nil || len(c.LineRange) != 2 {
						continue
					}
					if answers(q, c.Path, c.LineRange, lines) {
						if rank < 5 {
							hits++
						}
						rr += 1 / float64(rank+1)
						break
					}
				}
			}
			n := float64(len(evalSet))
			t.Logf("prefix=%v %-7s Hit@5 %.3f MRR@10 %.3f (%d questions)", prefix, mode, hits/n, rr/n, len(evalSet))
			fmt.Fprintf(os.Stderr, "prefix=%v %-7s Hit@5 %.3f MRR@10 %.3f\n", prefix, mode, hits/n, rr/n)
		}
		jb.Close()
		a.Close()
	}
}

func answers(q evalQuestion, path string, lr []int, lines map[[2]string]int) bool {
	for _, l := range q.labels {
		if l[0] == path && lr[0] <= lines[l] && lines[l] <= lr[1] {
			return true
		}
	}
	return false
}
