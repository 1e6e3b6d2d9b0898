package app_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/internal/syncbuf"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/store/neo4j/bolttest"
)

// patient is a deadline no test machine misses: these tests are about
// which generator answers, never about how fast.
const patient = time.Minute

// causalCorpus is an incident, the deploy that caused it and the library
// bump that caused the deploy's failure. Only the incident shares words
// with the question; the others can only be found by following links.
func causalCorpus() []h4r.Item {
	return []h4r.Item{
		{ID: "incident", Kind: "incident", Text: "checkout page crashed for all users",
			Links: []h4r.Link{{Type: "caused_by", Target: "deploy-42"}}},
		{ID: "deploy-42", Kind: "deploy", Text: "release of version 42 with a new payment library",
			Links: []h4r.Link{{Type: "caused_by", Target: "lib-bump"}}},
		{ID: "lib-bump", Kind: "change", Text: "payment library upgraded to 3.0"},
		{ID: "lunch", Kind: "note", Text: "team lunch on friday"},
	}
}

func neo4jConfig(t *testing.T, srv *bolttest.Server) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = patient, patient
	cfg.Neo4jURL, cfg.Neo4jUser, cfg.Neo4jPassword = srv.URL(), "h4r", "s3cret"
	return cfg
}

func open(t *testing.T, cfg config.Config, log *syncbuf.Buffer) *app.App {
	t.Helper()
	a, err := app.Open(context.Background(), cfg, app.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func causalPack(t *testing.T, a *app.App, req *h4r.ContextRequest) *h4r.Pack {
	t.Helper()
	p, err := a.Engine.ContextPack(context.Background(), h4r.Specialist{Type: "specialist", ID: "t", SecurityLevel: h4r.Internal}, req)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func causality(p *h4r.Pack) map[string]float64 {
	out := map[string]float64{}
	for _, r := range p.Results {
		if r.Signals != nil {
			out[r.ID] = r.Signals[h4r.Causality]
		}
	}
	return out
}

// TestCausalPacksFromNeo4j runs causal requests through the production
// wiring with NEO4J_URL pointing at the Bolt fake: ingest is mirrored into
// the graph, hops come from Neo4j, items reached only by links enter the
// pack, and a failing Neo4j degrades to the store's CTE with a warning
// and the same answer.
func TestCausalPacksFromNeo4j(t *testing.T) {
	g := bolttest.NewGraph()
	srv := bolttest.Start(t, g, bolttest.WithAuth("h4r", "s3cret"))
	var log syncbuf.Buffer
	a := open(t, neo4jConfig(t, srv), &log)
	if _, err := a.Store.Upsert(context.Background(), causalCorpus()); err != nil {
		t.Fatal(err)
	}
	if n := g.Nodes(); len(n) != 4 || !n["deploy-42"].Present {
		t.Fatalf("the graph after ingest: %v", n)
	}

	for _, tc := range []struct {
		name    string
		req     h4r.ContextRequest
		want    map[string]float64 // causality signal by id: 1/(1+hops), 0 for an anchor
		atLeast bool               // anchors come from every text generator's top hits (vectors too): more anchors, shorter hops
	}{
		{"anchors given: hops alone", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: []string{"lib-bump"}},
			map[string]float64{"lib-bump": 0, "deploy-42": 0.5, "incident": 1.0 / 3}, false},
		{"no anchors: hops from the top text hits", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal, Text: "checkout crashed"}},
			map[string]float64{"incident": 0, "deploy-42": 0.5}, true},
		{"directed against the arrows reaches nothing more", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: []string{"lib-bump"}, Directed: true},
			map[string]float64{"lib-bump": 0}, false},
		{"max hops 1", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: []string{"incident"}, MaxHops: 1},
			map[string]float64{"incident": 0, "deploy-42": 0.5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(g.Runs())
			p := causalPack(t, a, &tc.req)
			got := causality(p)
			if tc.atLeast && !atLeastSignals(got, tc.want) || !tc.atLeast && !equalSignals(got, tc.want) {
				t.Errorf("causality %v, want %v (at least: %v)", got, tc.want, tc.atLeast)
			}
			if len(p.Explainability.Warnings) != 0 || p.Status != h4r.StatusOK {
				t.Errorf("status %s, warnings %v", p.Status, p.Explainability.Warnings)
			}
			if !slices.ContainsFunc(g.Runs()[before:], func(r bolttest.Run) bool { return strings.Contains(r.Query, "$anchors") }) {
				t.Error("Neo4j was not asked for the hops")
			}
			for _, r := range p.Results {
				if w, ok := tc.want[r.ID]; ok && w < 1 && !strings.Contains(r.Metadata.Source, h4r.GenGraph) {
					t.Errorf("%s reached by hops has source %q", r.ID, r.Metadata.Source)
				}
			}
		})
	}

	t.Run("failing neo4j: the CTE answers, with a warning", func(t *testing.T) {
		g.FailAll(&bolttest.Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: "disk full"})
		defer g.FailAll(nil)
		p := causalPack(t, a, &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: []string{"lib-bump"}})
		if got, want := causality(p), map[string]float64{"lib-bump": 0, "deploy-42": 0.5, "incident": 1.0 / 3}; !equalSignals(got, want) {
			t.Errorf("causality %v, want %v", got, want)
		}
		if w := strings.Join(p.Explainability.Warnings, "\n"); !strings.Contains(w, "neo4j failed") || !strings.Contains(w, "store CTE answered") {
			t.Errorf("warnings %q do not say that the store answered for neo4j", w)
		}
		if p.Sources[h4r.GenGraph].Error != "" {
			t.Errorf("graph source error %q: a fallback answer is not a failure", p.Sources[h4r.GenGraph].Error)
		}
	})

	t.Run("writes while neo4j fails are kept", func(t *testing.T) {
		g.FailAll(&bolttest.Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: "disk full"})
		late := h4r.Item{ID: "rollback", Kind: "change", Text: "rolled back version 42",
			Links: []h4r.Link{{Type: "fixes", Target: "incident"}}}
		if _, err := a.Store.Upsert(context.Background(), []h4r.Item{late}); err != nil {
			t.Fatalf("a write failed because its mirror did: %v", err)
		}
		if _, err := a.Store.Get(context.Background(), "rollback"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), "mirroring to neo4j failed") {
			t.Error("the failed mirror was not reported in the log")
		}
		g.FailAll(nil)
		if err := app.RebuildGraph(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		if n := g.Nodes()["rollback"]; !n.Present || len(n.Links) != 1 {
			t.Errorf("after the rebuild the graph has rollback as %+v", n)
		}
	})
}

// atLeastSignals reports whether every wanted item is there with at least
// the wanted causality.
func atLeastSignals(got, want map[string]float64) bool {
	for id, w := range want {
		if g, ok := got[id]; !ok || g < w-1e-3 {
			return false
		}
	}
	return true
}

func equalSignals(got, want map[string]float64) bool {
	if len(got) != len(want) {
		return false
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || g < w-1e-3 || g > w+1e-3 {
			return false
		}
	}
	return true
}

// A store filled before NEO4J_URL was set is reported at start, and
// RebuildGraph brings the graph in step.
func TestRebuildGraphCatchesUpWithTheStore(t *testing.T) {
	g := bolttest.NewGraph()
	srv := bolttest.Start(t, g, bolttest.WithAuth("h4r", "s3cret"))
	cfg := neo4jConfig(t, srv)

	plain := cfg
	plain.Neo4jURL = ""
	var quiet syncbuf.Buffer
	a, err := app.Open(context.Background(), plain, app.WithLogger(slog.New(slog.NewTextHandler(&quiet, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.Upsert(context.Background(), causalCorpus()); err != nil {
		t.Fatal(err)
	}
	if err := app.RebuildGraph(context.Background(), a); err == nil || !strings.Contains(err.Error(), "NEO4J_URL is not set") {
		t.Errorf("RebuildGraph without NEO4J_URL: %v", err)
	}
	a.Close()

	// Junk from an earlier life of the graph, written by another client.
	other, err := neo4j.Open(context.Background(), srv.URL(), neo4j.WithAuth("h4r", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	if err := other.Upsert(context.Background(), []*h4r.Item{{ID: "stale", Kind: "note"}}); err != nil {
		t.Fatal(err)
	}

	var log syncbuf.Buffer
	a = open(t, cfg, &log)
	if !strings.Contains(log.String(), "not in step with the store") {
		t.Errorf("no warning at start about a graph behind the store; log:\n%s", log.String())
	}
	if err := app.RebuildGraph(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	nodes := g.Nodes()
	if _, ok := nodes["stale"]; ok || len(nodes) != 4 {
		t.Errorf("graph after the rebuild: %v", nodes)
	}
	p := causalPack(t, a, &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: []string{"incident"}})
	if got := causality(p); !equalSignals(got, map[string]float64{"incident": 0, "deploy-42": 0.5, "lib-bump": 1.0 / 3}) || len(p.Explainability.Warnings) != 0 {
		t.Errorf("after the rebuild: causality %v, warnings %v", got, p.Explainability.Warnings)
	}
}

func TestOpenRefusesABadNeo4j(t *testing.T) {
	srv := bolttest.Start(t, bolttest.NewGraph(), bolttest.WithAuth("h4r", "s3cret"))
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"wrong password", func(c *config.Config) { c.Neo4jPassword = "guess" }, "Unauthorized"},
		{"password in the URL is wrong too", func(c *config.Config) {
			c.Neo4jURL = "bolt://h4r:guess@" + srv.Addr()
		}, "Unauthorized"},
		{"unknown database", func(c *config.Config) { c.Neo4jDatabase = "nope" }, "DatabaseNotFound"},
		{"not a URL", func(c *config.Config) { c.Neo4jURL = "::guess" }, "NEO4J_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := neo4jConfig(t, srv)
			tc.edit(&cfg)
			var log syncbuf.Buffer
			a, err := app.Open(context.Background(), cfg, app.WithLogger(slog.New(slog.NewTextHandler(&log, nil))))
			if err == nil {
				a.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "NEO4J_URL") {
				t.Errorf("error %q, want NEO4J_URL: …%s…", err, tc.want)
			}
			if strings.Contains(err.Error(), "guess") || strings.Contains(log.String(), "guess") {
				t.Errorf("the password leaked: %q", err)
			}
		})
	}
	t.Run("credentials in a routing URL", func(t *testing.T) {
		cfg := neo4jConfig(t, srv)
		cfg.Neo4jURL = "neo4j://h4r:s3cret@" + srv.Addr()
		cfg.Neo4jUser, cfg.Neo4jPassword = "", ""
		var log syncbuf.Buffer
		open(t, cfg, &log)
	})
}
