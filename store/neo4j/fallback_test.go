package neo4j_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/store/neo4j"
	"github.com/h4r/h4r/store/neo4j/bolttest"
	"github.com/h4r/h4r/store/storetest"
)

// failingGenerator is a fallback that fails too.
type failingGenerator struct{}

func (failingGenerator) Name() string { return h4r.GenGraph }
func (failingGenerator) Generate(context.Context, h4r.CandidateQuery) ([]h4r.Hit, error) {
	return nil, errors.New("store unavailable")
}

// A Neo4j that fails, does not answer in time or is gone is answered by
// the store's CTE, with the CTE's hits and a FallbackError the engine
// turns into a warning.
func TestFallbackAnswersWhenNeo4jCannot(t *testing.T) {
	tc := storetest.HopCases()[1] // chain from the middle
	for _, mode := range []struct {
		name   string
		break_ func(t *testing.T, r *rig)
		opts   []neo4j.Option
		cause  string
	}{
		{"neo4j fails", func(t *testing.T, r *rig) {
			r.graph.FailAll(&bolttest.Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: "disk full"})
		}, nil, "disk full"},
		{"neo4j does not answer in time", func(t *testing.T, r *rig) {
			t.Cleanup(r.graph.Hold()) // released before the server closes (cleanups run last first)
		}, []neo4j.Option{neo4j.WithPrimaryTimeout(50 * time.Millisecond)}, "no answer within 50ms"},
		{"neo4j is gone", func(t *testing.T, r *rig) { r.server.Close() }, nil, "exceeded max retry time"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			// The driver would retry a lost server for 30s; once is enough here.
			r := newRig(t, neo4j.WithMaxRetryTime(0))
			r.ingest(t, tc.Items()...)
			mode.break_(t, r)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			hits, err := r.generator(mode.opts...).Generate(ctx, tc.Query())
			var fe *h4r.FallbackError
			if !errors.As(err, &fe) {
				t.Fatalf("got %v, want a FallbackError", err)
			}
			if fe.Primary != neo4j.PrimaryName || fe.Fallback != neo4j.FallbackName || !strings.Contains(fe.Err.Error(), mode.cause) {
				t.Errorf("fallback error %q, want neo4j → store CTE caused by %q", fe, mode.cause)
			}
			cte, cerr := r.store.Graph().Generate(ctx, tc.Query())
			if cerr != nil {
				t.Fatal(cerr)
			}
			if got, want := ordered(hits), ordered(cte); len(got) == 0 || !slices.Equal(got, want) {
				t.Errorf("hits %v, want the CTE's %v", got, want)
			}
		})
	}
}

func TestFallbackThatFailsTooIsAnError(t *testing.T) {
	r := newRig(t)
	r.ingest(t, storetest.HopCases()[0].Items()...)
	r.graph.FailAll(&bolttest.Failure{Code: "Neo.DatabaseError.General.UnknownError", Message: "disk full"})
	g := neo4j.NewGenerator(r.client, r.store, failingGenerator{})
	hits, err := g.Generate(context.Background(), h4r.CandidateQuery{Anchors: []string{"a"}})
	var fe *h4r.FallbackError
	if err == nil || errors.As(err, &fe) || hits != nil {
		t.Fatalf("got %v, %v; want a plain error and no hits", hits, err)
	}
	for _, part := range []string{"disk full", "store unavailable"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
}

// A request whose own deadline has passed is not handed to the fallback:
// it could not answer either.
func TestExpiredRequestIsNotFallenBackOn(t *testing.T) {
	r := newRig(t)
	r.ingest(t, storetest.HopCases()[0].Items()...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.generator().Generate(ctx, h4r.CandidateQuery{Anchors: []string{"a"}})
	var fe *h4r.FallbackError
	if !errors.Is(err, context.Canceled) || errors.As(err, &fe) {
		t.Fatalf("got %v, want context.Canceled without a fallback", err)
	}
}
