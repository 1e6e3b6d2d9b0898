package app

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/store/sqlite"
)

// plainStore hides the vector methods of the store it wraps, as the
// Postgres store has none.
type plainStore struct{ Store }

// A store that keeps no vectors, without QDRANT_URL: full-text only, and
// the log says why; reindex says what to set. Requests never fail for it.
func TestNoVectorStoreWithoutQdrant(t *testing.T) {
	s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "h4r.db"), sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var logs bytes.Buffer
	a := &App{Config: config.Default(), Store: plainStore{s}, base: plainStore{s}}
	gens, fusion, err := textGenerators(t.Context(), a.Config, a, options{log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if len(gens) != 1 || gens[0].Name() != h4r.GenFullText {
		t.Fatalf("generators %v, want full-text alone", gens)
	}
	if fusion.Method != "relative" || fusion.Weights[h4r.GenVector] != a.Config.FusionVector {
		t.Errorf("fusion %+v: the configured method and weights still apply", fusion)
	}
	if !strings.Contains(logs.String(), "vector candidates are unavailable") {
		t.Errorf("log %q, want the warning", logs.String())
	}
	if _, err := RebuildVectors(t.Context(), a, nil); err == nil || !strings.Contains(err.Error(), "QDRANT_URL") {
		t.Errorf("RebuildVectors: %v, want an error pointing at QDRANT_URL", err)
	}
}
