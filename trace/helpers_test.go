package trace_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/trace"
)

var quiet = slog.New(slog.DiscardHandler)

// now is the tests' clock: traces are from the day before.
var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func clock() time.Time { return now }

// harness is the real service as app.Open wires it (a SQLite store in a
// temp directory, the bundled OPA policy, the slicer and the engine) with
// a trace service over it.
type harness struct {
	app *app.App
	svc *trace.Service
}

func newHarness(t testing.TB, opts ...trace.ServiceOption) *harness {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	// The hashing embedder, with its fusion settings: the learned one learns
	// in the background once a minute as the corpus grows, so what a search
	// golden saw would depend on how long the seeding took.
	cfg.Embedder, cfg.FusionVector, cfg.VectorCandidates = "hash", 0.1, 20
	// Generous, so that a loaded -race run (or the 10k benchmark's seeding)
	// never times out.
	cfg.GeneratorTimeout, cfg.RequestTimeout, cfg.WriteTimeout = 30*time.Second, 30*time.Second, 2*time.Minute
	a, err := app.Open(context.Background(), cfg, app.WithClock(clock), app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	opts = append([]trace.ServiceOption{trace.WithClock(clock), trace.WithLogger(quiet), trace.WithSearch(a.Engine, a.Slicer)}, opts...)
	return &harness{app: a, svc: trace.NewService(a.Store, opts...)}
}

// fixture reads testdata/trace.json.
func fixture(t testing.TB) *trace.CommitTrace {
	t.Helper()
	b, err := os.ReadFile("testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func (h *harness) ingest(t testing.TB, tr *trace.CommitTrace) *trace.CommitTrace {
	t.Helper()
	out, err := h.svc.Ingest(context.Background(), tr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (h *harness) item(t testing.TB, id string) *h4r.Item {
	t.Helper()
	it, err := h.app.Store.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("reading %s: %v", id, err)
	}
	return it
}

// publicReader is a reader without clearance.
var publicReader = h4r.Specialist{Type: "agent", ID: "reader", SecurityLevel: h4r.Public}

// filterCorpus is a harness holding six traces of one summary over two
// repos and three areas: the corpus of the search filter tests.
func filterCorpus(t testing.TB) *harness {
	h := newHarness(t)
	areas := []string{"pkg/auth", "pkg/store", "cmd/server"}
	for i := range 6 {
		tr := fixture(t)
		tr.SHA = fmt.Sprintf("%040x", i+1)
		tr.Repo = []string{"acme/gateway", "acme/billing"}[i%2]
		tr.Areas = []string{areas[i%3]}
		tr.Summary = fmt.Sprintf("retry with backoff in %s, change %d", areas[i%3], i)
		h.ingest(t, tr)
	}
	return h
}
