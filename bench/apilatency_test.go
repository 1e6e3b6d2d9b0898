package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/cputime"
	"github.com/h4r/h4r/store/sqlite"
)

// The build says it learns the embedder only when the configured one
// learns: with vectors off or the hashing embedder there is no model.
func TestBuildCorpusSaysLearningOnlyWhenItLearns(t *testing.T) {
	for _, tt := range []struct {
		embedder string
		learns   bool
	}{
		{"learned", true},
		{"hash", false},
		{"none", false},
	} {
		t.Run(tt.embedder, func(t *testing.T) {
			cfg := config.Default()
			cfg.Embedder = tt.embedder
			var out bytes.Buffer
			if _, err := BuildCorpus(t.Context(), cfg, filepath.Join(t.TempDir(), "items"), 200, 1, 500, &out); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), "learning the embedder"); got != tt.learns {
				t.Errorf("said it learns: %v, want %v; it printed:\n%s", got, tt.learns, out.String())
			}
		})
	}
}

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
	// The folder is at rest: the build saved a model learned over all its
	// items, and every item has a vector of it, so a server started on it
	// learns nothing and embeds nothing.
	cfg.DataDir = dir
	st, err := sqlite.Open(ctx, cfg.SQLitePath())
	if err != nil {
		t.Fatal(err)
	}
	_, data, err := st.EmbedderModel(ctx, "learned")
	st.Close()
	if err != nil || data == nil {
		t.Fatalf("the build saved no learned model (%v)", err)
	}
	model, err := embed.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if model.Docs() != 500 {
		t.Fatalf("the saved model was learned over %d items, want all 500", model.Docs())
	}
	a, err := app.Open(ctx, cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n, err := a.VectorCount(ctx); err != nil || n != 500 {
		t.Errorf("vectors of the current model: %d (%v), want 500", n, err)
	}
}

// Against a server at a URL, every request is a decoded pack with the
// benchmark's specialist and a three-word hybrid query; packs whose status
// is not ok count as degraded, and an error status fails the run.
func TestAPILatencyDecodesEveryPack(t *testing.T) {
	var calls, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		// A server that streams its answer (chunked, as a server behind
		// --url may): the pack, then a newline, in chunks that may reach
		// the client apart. A client that closes the body once the pack
		// is decoded leaves the end unread, and net/http then closes the
		// connection instead of keeping it.
		b, _ := json.Marshal(h4r.Pack{Status: status, Results: []h4r.Result{{ID: "a"}}})
		w.Write(b)
		w.(http.Flusher).Flush()
		time.Sleep(time.Millisecond)
		w.Write([]byte("\n"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
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
	// A client that dials for each pack measures the server's accepting
	// connections as much as its packs: the client keeps them, so that
	// at most about one per request in flight is opened.
	if n := conns.Load(); n > 2*4 {
		t.Errorf("the client opened %d connections for 100 packs, at most 4 in flight", n)
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

// helperServerEnv makes the test binary a pack server (servePacks) instead
// of running the tests: the server process of
// TestAPILatencyMeasuresTheServersCPU.
const helperServerEnv = "H4R_BENCH_HELPER_SERVER"

// helperPackCPU is the CPU the helper server spends on each pack.
const helperPackCPU = 3 * time.Millisecond

func TestMain(m *testing.M) {
	if os.Getenv(helperServerEnv) != "" {
		servePacks()
		return
	}
	os.Exit(m.Run())
}

// servePacks answers readiness and packs on H4R_ADDR, spinning
// helperPackCPU on each pack, until the process is stopped.
func servePacks() {
	mux := http.NewServeMux()
	mux.HandleFunc("/health/ready", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/v1/context-pack", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for start := cputime.Process(); cputime.Process()-start < helperPackCPU; {
		}
		_ = json.NewEncoder(w).Encode(h4r.Pack{Status: h4r.StatusOK, Results: []h4r.Result{{ID: "a"}}})
	})
	_ = http.ListenAndServe(os.Getenv("H4R_ADDR"), mux)
}

// With a server process of its own, each run reports the server's CPU
// a pack (the helper spends helperPackCPU on each) and the client's.
func TestAPILatencyMeasuresTheServersCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a store")
	}
	rep, err := APILatency(t.Context(), config.Default(), APILatencyOptions{
		Sizes: []int{10}, Requests: 100, Concurrency: []int{1}, Seed: 1, DataDir: t.TempDir(),
		Server: []string{os.Args[0]}, Env: []string{helperServerEnv + "=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Runs[0]
	want := float64(helperPackCPU) / float64(time.Millisecond)
	// /proc counts in ticks of 10 ms: 100 packs of 3 ms are 30 ticks, ±1;
	// the helper's HTTP handling adds a little (more under -race).
	if run.ServerCPUms < want*0.9 || run.ServerCPUms > want*2 || run.ClientCPUms <= 0 {
		t.Fatalf("server %.2f cpu-ms a pack, client %.2f; want about %.0f for the server, more than 0 for the client",
			run.ServerCPUms, run.ClientCPUms, want)
	}
	var md strings.Builder
	APILatencyMarkdown(&md, rep)
	if !strings.Contains(md.String(), fmt.Sprintf("| %.2f / %.2f |", run.ServerCPUms, run.ClientCPUms)) {
		t.Errorf("the table does not show the CPU a pack:\n%s", md.String())
	}
}
