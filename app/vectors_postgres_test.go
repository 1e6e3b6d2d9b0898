package app_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/demo"
)

// Over Postgres without QDRANT_URL the service has vector candidates (the
// in-process index over item_vectors): /health/ready has a "vectors" check
// that passes once the index loaded, and a semantic pack is answered by
// the vector generator (the learned embedder, once it learned from the
// demo corpus), not by the full-text fallback, before and after a restart.
func TestPostgresVectorsWithoutQdrant(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = postgresURL(t)
	cfg.GeneratorTimeout, cfg.RequestTimeout = patient, patient
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ready, ok := a.Checks["vectors"]
	if !ok {
		t.Fatalf("checks %v: no vectors readiness check", a.Checks)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ready(t.Context()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("vectors not ready after 10 s: %v", ready(t.Context()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, err := demo.LoadIfEmpty(t.Context(), a.Store); err != nil || n == 0 {
		t.Fatalf("loading the demo corpus: %d items, %v", n, err)
	}
	// The learned embedder learns from the demo corpus, switches the
	// replica's index to its model and embeds every item.
	if n, err := a.LearnEmbedder(t.Context()); err != nil || n == 0 {
		t.Fatalf("LearnEmbedder = %d, %v", n, err)
	}
	semantic(t, a)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart loads the saved model and the vectors of it.
	b, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	semantic(t, b)
}

// semantic asks the README's query as a semantic pack and checks that the
// vector generator answered it.
func semantic(t *testing.T, a *app.App) {
	t.Helper()
	p, err := a.Engine.ContextPack(t.Context(), h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}},
		&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QuerySemantic, Text: "login test failures with selector issues"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != h4r.StatusOK || len(p.Results) == 0 {
		t.Fatalf("pack status %s with %d results, warnings %q", p.Status, len(p.Results), p.Explainability.Warnings)
	}
	if st, ok := p.Sources[h4r.GenVector]; !ok || st.Error != "" || st.Candidates == 0 {
		t.Errorf("sources %+v: want vector hits without error", p.Sources)
	}
}
