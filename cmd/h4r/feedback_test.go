package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/rag"
)

// TestBenchTuneFromFeedback: packs judged through the rag service become
// the labelled queries bench tune fits weights on.
func TestBenchTuneFromFeedback(t *testing.T) {
	ctx := context.Background()
	data, out := t.TempDir(), t.TempDir()
	cfg := config.Default()
	cfg.DataDir = data
	a, err := app.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	topics := []string{"zebra", "walrus", "pelican", "otter", "lynx", "heron"}
	var items []h4r.Item
	for i, tp := range topics {
		for j := range 3 {
			items = append(items, h4r.Item{ID: fmt.Sprintf("%s-%d", tp, j), Kind: "note", Text: fmt.Sprintf("notes on the %s, part %d of %d", tp, j, i)})
		}
	}
	if _, err := a.Store.Upsert(ctx, items); err != nil {
		t.Fatal(err)
	}
	svc := a.RAG()
	spec := h4r.Specialist{Type: "specialist", ID: "agent", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{}}
	k := 2
	for i, tp := range topics {
		resp, err := svc.Query(ctx, spec, rag.QueryRequest{SessionID: "s", AgentID: "a", Query: tp, K: &k})
		if err != nil {
			t.Fatal(err)
		}
		verdict := h4r.VerdictUseful
		if i%3 == 2 {
			verdict = h4r.VerdictWrong
		}
		if err := svc.Feedback(ctx, spec, rag.FeedbackRequest{ContextPackID: resp.ContextPack.ID, Verdict: verdict}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	vars := env(map[string]string{"H4R_LOG_LEVEL": "error", "H4R_DATA_DIR": data})
	args := []string{"bench", "tune", "--from-feedback", "--k", "2", "--restarts", "0", "--out", out}
	if err := run(ctx, args, nil, &stdout, &stderr, vars); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var rep struct {
		Datasets []string `json:"datasets"`
		PerFold  []struct {
			TrainQueries int `json:"trainQueries"`
			TestQueries  int `json:"testQueries"`
		} `json:"folds"`
	}
	raw, err := os.ReadFile(filepath.Join(out, "tune.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range rep.PerFold {
		total += f.TestQueries
	}
	// Six packs, two judged wrong: four labelled queries.
	if !slices.Equal(rep.Datasets, []string{"feedback"}) || total != 4 {
		t.Errorf("tune report datasets %v, %d held-out queries; want [feedback], 4\n%s", rep.Datasets, total, raw)
	}
	if _, err := config.ReadWeightsFile(filepath.Join(out, "weights.json")); err != nil {
		t.Errorf("weights file: %v", err)
	}
}
