package neo4j_test

import (
	"errors"
	"log/slog"

	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/h4r/h4r"

	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/store/neo4j/bolttest"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

// tokenCounter is built once: parsing the BPE tables is most of what
// opening a store costs, and a counter never changes once built.
var tokenCounter = sync.OnceValues(func() (*tokens.Counter, error) { return tokens.New(tokens.CL100K) })

// rig is the parts of one test: a real SQLite store (the source of truth
// and the CTE fallback), a Bolt server answering from an in-memory graph,
// and the real driver connected to it.
type rig struct {
	store  *sqlite.Store
	graph  *bolttest.Graph
	server *bolttest.Server
	client *neo4j.Client
	mirror *neo4j.Mirror
}

func newRig(t *testing.T, opts ...neo4j.Option) *rig {
	t.Helper()
	ctx := context.Background()
	counter, err := tokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h4r.db"),
		sqlite.WithLogger(slog.New(slog.DiscardHandler)), sqlite.WithTokenCounter(counter))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	g := bolttest.NewGraph()
	srv := bolttest.Start(t, g)
	client, err := neo4j.Open(ctx, srv.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(context.Background()) })
	return &rig{store: store, graph: g, server: srv, client: client, mirror: neo4j.NewMirror(client, store, opts...)}
}

// ingest writes items to the store and mirrors them, as app's store
// wrapper does.
func (r *rig) ingest(t *testing.T, items ...h4r.Item) {
	t.Helper()
	ids, err := r.store.Upsert(context.Background(), items)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.mirror.Sync(context.Background(), ids...); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) generator(opts ...neo4j.Option) *neo4j.Generator {
	return neo4j.NewGenerator(r.client, r.store, r.store.Graph(), opts...)
}

func distances(hits []h4r.Hit) map[string]int {
	out := map[string]int{}
	for _, h := range hits {
		out[h.Item.ID] = h.Distance
	}
	return out
}

type idDist struct {
	ID       string
	Distance int
}

func ordered(hits []h4r.Hit) []idDist {
	out := make([]idDist, len(hits))
	for i, h := range hits {
		out[i] = idDist{h.Item.ID, h.Distance}
	}
	return out
}

func asH4R(err error) *h4r.Error {
	var e *h4r.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
