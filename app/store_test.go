package app_test

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/store/postgres"
)

// postgresURL returns a database URL whose search_path is a schema of
// t's own, dropped when t ends (pgtest.Schema).
func postgresURL(t *testing.T) string { return pgtest.Schema(t, "h4r_app_test") }

// With DATABASE_URL set the service keeps its items in Postgres, and a
// pack over the demo corpus is answered from there.
func TestDatabaseURLSelectsPostgres(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = postgresURL(t)
	cfg.GeneratorTimeout, cfg.RequestTimeout = patient, patient
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if _, ok := a.Store.(*postgres.Store); !ok {
		t.Fatalf("store is %T, want *postgres.Store", a.Store)
	}
	if n, err := demo.LoadIfEmpty(t.Context(), a.Store); err != nil || n == 0 {
		t.Fatalf("loading the demo corpus: %d items, %v", n, err)
	}
	if entries, _ := os.ReadDir(cfg.DataDir); len(entries) != 0 {
		t.Errorf("the data directory holds %d entries: the SQLite store was opened too", len(entries))
	}
	p, err := a.Engine.ContextPack(t.Context(), h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}},
		&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "login test failures with selector issues"}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(p.Results))
	for i, r := range p.Results {
		ids[i] = r.ID
	}
	if !slices.Contains(ids, "tf-login-wrong-password") || p.Status != h4r.StatusOK {
		t.Errorf("pack status %s with %v, want the wrong-password failure among the results", p.Status, ids)
	}
}

func TestUnreachableDatabaseStopsTheStart(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.DatabaseURL = "postgres://h4r@127.0.0.1:1/h4r?sslmode=disable&connect_timeout=2"
	a, err := app.Open(t.Context(), cfg, app.WithLogger(slog.New(slog.DiscardHandler)))
	if err == nil {
		a.Close()
		t.Fatal("Open succeeded over an unreachable database")
	}
	for _, want := range []string{"DATABASE_URL", "cannot reach Postgres at 127.0.0.1:1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
