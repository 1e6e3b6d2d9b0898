package neo4j_test

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/store/neo4j/bolttest"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/store/storetest"
)

// TestRealNeo4j runs the shared hop table, the filter cases and a rebuild
// against a real Neo4j (5.26 or later) when NEO4J_URL is set, with
// NEO4J_USER, NEO4J_PASSWORD and NEO4J_DATABASE as the service reads them.
// It CLEARS the H4R item graph (:Item nodes) of that database; h4r reindex
// --graph rebuilds it from the store. CI has no Neo4j and skips it.
//
//	docker run -d -p 7687:7687 -e NEO4J_AUTH=neo4j/password12345 neo4j:5.26
//	NEO4J_URL=neo4j://localhost:7687 NEO4J_PASSWORD=password12345 go test ./store/neo4j -run RealNeo4j -v
func TestRealNeo4j(t *testing.T) {
	url := os.Getenv("NEO4J_URL")
	if url == "" {
		t.Skip("NEO4J_URL is not set: no real Neo4j to test against")
	}
	user := os.Getenv("NEO4J_USER")
	if user == "" {
		user = "neo4j"
	}
	integration(t, url, neo4j.WithAuth(user, os.Getenv("NEO4J_PASSWORD")), neo4j.WithDatabase(os.Getenv("NEO4J_DATABASE")))
}

// TestIntegrationSuiteOverTheFake runs the real-Neo4j suite against the
// Bolt fake, so that the suite itself is known to work where CI can run it.
func TestIntegrationSuiteOverTheFake(t *testing.T) {
	srv := bolttest.Start(t, bolttest.NewGraph(), bolttest.WithAuth("neo4j", "pw"), bolttest.WithDatabase("h4r"))
	integration(t, srv.RoutingURL(), neo4j.WithAuth("neo4j", "pw"), neo4j.WithDatabase("h4r"))
}

func integration(t *testing.T, url string, opts ...neo4j.Option) {
	ctx := context.Background()
	client, err := neo4j.Open(ctx, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(ctx)
	counter, err := tokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	openStore := func(t *testing.T) *sqlite.Store {
		st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h4r.db"),
			sqlite.WithLogger(slog.New(slog.DiscardHandler)), sqlite.WithTokenCounter(counter))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	// Subtests run one after another: they share the database.
	for _, tc := range storetest.HopCases() {
		t.Run(tc.Name, func(t *testing.T) {
			st := openStore(t)
			if _, err := st.Upsert(ctx, tc.Items()); err != nil {
				t.Fatal(err)
			}
			m := neo4j.NewMirror(client, st)
			if _, err := m.Rebuild(ctx); err != nil {
				t.Fatal(err)
			}
			hits, err := neo4j.NewGenerator(client, st, st.Graph()).Generate(ctx, tc.Query())
			if err != nil {
				t.Fatal(err)
			}
			if got := distances(hits); !maps.Equal(got, tc.Want) {
				t.Errorf("distances %v, want %v", got, tc.Want)
			}
			cte, err := st.Graph().Generate(ctx, tc.Query())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ordered(hits), ordered(cte)) {
				t.Errorf("neo4j %v, CTE %v", ordered(hits), ordered(cte))
			}
		})
	}
	t.Run("mirror of replace and delete", func(t *testing.T) {
		st := openStore(t)
		m := neo4j.NewMirror(client, st)
		if _, err := m.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		upsert := func(items ...h4r.Item) {
			ids, err := st.Upsert(ctx, items)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Sync(ctx, ids...); err != nil {
				t.Fatal(err)
			}
		}
		upsert(h4r.Item{ID: "a", Kind: "event", Text: "a", Links: []h4r.Link{link("caused_by", "b")}},
			h4r.Item{ID: "b", Kind: "event", Text: "b", Links: []h4r.Link{link("fixes", "c")}},
			h4r.Item{ID: "c", Kind: "event", Text: "c"})
		upsert(h4r.Item{ID: "a", Kind: "event", Text: "a", Links: []h4r.Link{link("similar_to", "c")}})
		if err := st.Delete(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		if err := m.Sync(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		g := neo4j.NewGenerator(client, st, st.Graph())
		for _, q := range []h4r.CandidateQuery{
			{Anchors: []string{"a"}, MaxHops: 5},
			{Anchors: []string{"c"}, MaxHops: 5},
			{Anchors: []string{"c"}, MaxHops: 5, Directed: true},
		} {
			hits, err := g.Generate(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			cte, _ := st.Graph().Generate(ctx, q)
			if !slices.Equal(ordered(hits), ordered(cte)) {
				t.Errorf("%+v: neo4j %v, CTE %v", q, ordered(hits), ordered(cte))
			}
		}
		if n, err := client.Count(ctx); err != nil || n != 2 {
			t.Errorf("graph holds %d items (%v), want 2", n, err)
		}
	})
	t.Run("link type filter", func(t *testing.T) {
		st := openStore(t)
		if _, err := st.Upsert(ctx, []h4r.Item{
			{ID: "a", Kind: "event", Text: "a", Links: []h4r.Link{link("caused_by", "b"), link("similar_to", "c")}},
			{ID: "b", Kind: "event", Text: "b"}, {ID: "c", Kind: "event", Text: "c"},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := neo4j.NewMirror(client, st).Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		hits, err := neo4j.NewGenerator(client, st, st.Graph(), neo4j.WithLinkTypes("caused_by")).
			Generate(ctx, h4r.CandidateQuery{Anchors: []string{"a"}})
		if err != nil || !slices.Equal(ordered(hits), []idDist{{"a", 0}, {"b", 1}}) {
			t.Errorf("caused_by only: %v, %v", ordered(hits), err)
		}
	})
}
