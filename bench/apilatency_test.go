package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
)

// A store folder is built once and reused: a second build of the same
// size adds nothing, a larger one adds only the missing items, and a
// folder of another seed is refused rather than measured.
func TestBuildCorpusReusesItsFolder(t *testing.T) {
	cfg := config.Default()
	dir := filepath.Join(t.TempDir(), "items")
	ctx := context.Background()
	for _, step := range []struct {
		name  string
		size  int
		seed  uint64
		built bool
		fails bool
	}{
		{"first build", 300, 1, true, false},
		{"the same size again", 300, 1, false, false},
		{"grown", 500, 1, true, false},
		{"another seed", 500, 2, false, true},
		{"fewer items than it holds", 200, 1, false, true},
	} {
		built, err := BuildCorpus(ctx, cfg, dir, step.size, step.seed, 500, io.Discard)
		if (err != nil) != step.fails || built != step.built {
			t.Fatalf("%s: built %v, error %v; want built %v, fails %v", step.name, built, err, step.built, step.fails)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, corpusMarkFile))
	if err != nil {
		t.Fatal(err)
	}
	var m corpusMark
	if err := json.Unmarshal(b, &m); err != nil || m.Items != 500 {
		t.Fatalf("mark %s (%v), want 500 items", b, err)
	}
}

// Against a server at a URL, every request is a decoded pack with the
// benchmark's specialist and a three-word hybrid query; packs whose status
// is not ok count as degraded, and an error status fails the run.
func TestAPILatencyDecodesEveryPack(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Query      h4r.Query      `json:"query"`
			Specialist h4r.Specialist `json:"specialist"`
		}
		if r.URL.Path != "/v1/context-pack" || json.NewDecoder(r.Body).Decode(&body) != nil ||
			body.Query.Type != h4r.QueryHybrid || len(strings.Fields(body.Query.Text)) != 3 || body.Specialist.ID != Benchmarker().ID {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		status := h4r.StatusOK
		if calls.Add(1)%4 == 0 {
			status = h4r.StatusDegraded
		}
		_ = json.NewEncoder(w).Encode(h4r.Pack{Status: status, Results: []h4r.Result{{ID: "a"}}})
	}))
	defer srv.Close()
	out := t.TempDir()
	rep, err := APILatency(context.Background(), config.Default(), APILatencyOptions{
		Sizes: []int{10}, Requests: 40, Concurrency: []int{1, 4}, Seed: 1, URL: srv.URL, QueriesDir: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || calls.Load() != 20+80 { // 20 untimed first
		t.Fatalf("%d runs, %d calls; want 2 runs, 100 calls", len(rep.Runs), calls.Load())
	}
	degraded := rep.Runs[0].Degraded + rep.Runs[1].Degraded
	if degraded != 20 || rep.Runs[1].Concurrency != 4 || rep.Runs[0].Latency.P95 <= 0 || rep.Runs[0].MeanBytes <= 0 {
		t.Errorf("runs %+v: want 20 degraded in all, latencies and sizes measured", rep.Runs)
	}
	q, err := os.ReadFile(filepath.Join(out, "queries-10.txt"))
	if err != nil || len(strings.Fields(string(q))) != 3*40 {
		t.Errorf("queries file: %d words (%v), want 120", len(strings.Fields(string(q))), err)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	if _, err := APILatency(context.Background(), config.Default(), APILatencyOptions{Sizes: []int{10}, Requests: 5, Concurrency: []int{1}, URL: down.URL}); err == nil {
		t.Error("a server answering 503 was measured")
	}
}
