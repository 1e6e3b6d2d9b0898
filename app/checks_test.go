package app_test

import (
	"context"
	"testing"

	"github.com/h4r/h4r/internal/syncbuf"

	"github.com/h4r/h4r/store/neo4j/bolttest"
	"github.com/h4r/h4r/store/qdrant/qdranttest"
)

// TestReadinessChecks: each configured backend besides the store has a
// check that /health/ready runs, and it notices when the backend is gone.
func TestReadinessChecks(t *testing.T) {
	srv := bolttest.Start(t, bolttest.NewGraph(), bolttest.WithAuth("h4r", "s3cret"))
	_, qdrantURL := qdranttest.Start(t)
	cfg := neo4jConfig(t, srv)
	cfg.QdrantURL = qdrantURL
	a := open(t, cfg, &syncbuf.Buffer{})

	for _, name := range []string{"neo4j", "qdrant"} {
		check, ok := a.Checks[name]
		if !ok {
			t.Fatalf("no readiness check %q (have %v)", name, len(a.Checks))
		}
		if err := check(context.Background()); err != nil {
			t.Errorf("%s check failed while the backend is up: %v", name, err)
		}
	}
	srv.Close()
	if err := a.Checks["neo4j"](context.Background()); err == nil {
		t.Error("the neo4j check passed after the server was closed")
	}
}
