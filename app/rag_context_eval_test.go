package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	ingestion "github.com/h4r/h4r/ingest"
	"github.com/h4r/h4r/rag"
)

// TestRAGGitContextRetrieval measures what the working context of POST
// /query (git.changed_files, working_dir) does for retrieval on the
// evaluation set of TestContextualPrefixRetrieval: file-level Recall@5
// and MRR@10 (a chunk of a labelled file answers), without a context and
// with one whose changed files are the answering file and two decoys (the
// files of the next two questions), and with the decoys alone (a context
// that does not hold the answer). It ingests the repository (about half
// a minute), so it runs only with H4R_RAG_CONTEXT_EVAL=1; it reports, it
// does not judge.
func TestRAGGitContextRetrieval(t *testing.T) {
	if os.Getenv("H4R_RAG_CONTEXT_EVAL") == "" {
		t.Skip("a measurement (ingests the repository): set H4R_RAG_CONTEXT_EVAL=1 to run it")
	}
	ctx := context.Background()
	corpus := t.TempDir()
	copyCorpus(t, corpus)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	// The hashing embedder and its fusion settings, which the documented figures were measured with.
	cfg.Embedder, cfg.FusionVector, cfg.VectorCandidates = "hash", 0.1, 20
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := app.Open(ctx, cfg, app.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	jb, err := app.OpenJobs(ctx, a, log, app.WithIngestRoots(corpus))
	if err != nil {
		t.Fatal(err)
	}
	defer jb.Close()
	j, err := jb.StartIngest(ctx, "", ingestion.Request{Sources: []ingestion.Source{{Type: ingestion.TypeFS, Path: corpus}}})
	if err != nil {
		t.Fatal(err)
	}
	jb.Runner.Wait()
	if done, _ := jb.Get(ctx, j.ID); done.State != "succeeded" {
		t.Fatalf("ingest: %+v", done)
	}
	svc := a.RAG()
	spec := h4r.Specialist{ID: "eval", SecurityLevel: h4r.Restricted}
	k := 10
	graph := true
	modes := []struct {
		name    string
		context func(i int, r *rag.QueryRequest)
	}{
		{"no context", func(int, *rag.QueryRequest) {}},
		{"git context", func(i int, r *rag.QueryRequest) {
			r.WorkingDir = corpus
			r.Git = &rag.Git{SHA: "HEAD", Branch: "main", ChangedFiles: []string{
				evalSet[i].labels[0][0], evalSet[(i+1)%len(evalSet)].labels[0][0], evalSet[(i+2)%len(evalSet)].labels[0][0]}}
		}},
		{"decoys only", func(i int, r *rag.QueryRequest) {
			r.WorkingDir = corpus
			r.Git = &rag.Git{SHA: "HEAD", Branch: "main", ChangedFiles: []string{
				evalSet[(i+1)%len(evalSet)].labels[0][0], evalSet[(i+2)%len(evalSet)].labels[0][0]}}
		}},
		{"git context, prefer_graph", func(i int, r *rag.QueryRequest) {
			r.WorkingDir = corpus
			r.Git = &rag.Git{SHA: "HEAD", Branch: "main", ChangedFiles: []string{
				evalSet[i].labels[0][0], evalSet[(i+1)%len(evalSet)].labels[0][0], evalSet[(i+2)%len(evalSet)].labels[0][0]}}
			r.PreferGraph = &graph
		}},
	}
	for _, m := range modes {
		var hits, rr float64
		for i, q := range evalSet {
			req := rag.QueryRequest{SessionID: "eval", AgentID: "eval", Query: q.q, K: &k}
			m.context(i, &req)
			resp, err := svc.Query(ctx, spec, req)
			if err != nil {
				t.Fatal(err)
			}
			for rank, ch := range resp.ContextPack.Chunks {
				if answersFile(q, ch.Path) {
					if rank < 5 {
						hits++
					}
					rr += 1 / float64(rank+1)
					break
				}
			}
		}
		n := float64(len(evalSet))
		t.Logf("%-26s Recall@5 %.3f MRR@10 %.3f (%d questions)", m.name, hits/n, rr/n, len(evalSet))
		fmt.Fprintf(os.Stderr, "%-26s Recall@5 %.3f MRR@10 %.3f (%d questions)\n", m.name, hits/n, rr/n, len(evalSet))
	}
}

func answersFile(q evalQuestion, path string) bool {
	for _, l := range q.labels {
		if l[0] == path {
			return true
		}
	}
	return false
}
