package app_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
)

// motorCorpus: sixty texts about cars and sixty about the sea. The car
// texts say "car" or "automobile", never both; "auto-0" and the other
// automobile texts never say "car", so full-text search for "car" misses
// them, while the learned embedder, which saw both words beside "engine",
// "wheel" and "garage", puts them next to the car texts.
func motorCorpus() []h4r.Item {
	car := []string{"engine", "wheel", "garage", "driver", "road", "fuel"}
	sea := []string{"ocean", "wave", "ship", "sailor", "harbour", "tide"}
	var items []h4r.Item
	for i := range 60 {
		word := "car"
		id := fmt.Sprintf("car-%d", i)
		if i%2 == 1 {
			word, id = "automobile", fmt.Sprintf("auto-%d", i)
		}
		items = append(items,
			h4r.Item{ID: id, Kind: "note", Text: fmt.Sprintf("the %s %s %s %s", word, car[i%6], car[(i+1)%6], car[(i+3)%6])},
			h4r.Item{ID: fmt.Sprintf("sea-%d", i), Kind: "note", Text: fmt.Sprintf("the %s %s %s", sea[i%6], sea[(i+2)%6], sea[(i+4)%6])})
	}
	return items
}

func semanticIDs(t *testing.T, a *app.App, text string) []string {
	t.Helper()
	p, err := a.Engine.ContextPack(t.Context(), h4r.Specialist{ID: "t", SecurityLevel: h4r.Internal},
		&h4r.ContextRequest{Query: h4r.Query{Type: h4r.QuerySemantic, Text: text}, Limit: 40, Budget: &h4r.Budget{MaxItems: 40}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != h4r.StatusOK {
		t.Fatalf("status %s, warnings %q", p.Status, p.Explainability.Warnings)
	}
	return resultIDs(p)
}

// The learned embedder learns nothing from an empty store, so hybrid is
// full-text alone; once learned (after a bulk load, as h4r
// reindex does), semantic search finds the automobile texts for "car",
// and a restart loads the saved model instead of learning again.
func TestLearnedEmbedderLifecycle(t *testing.T) {
	cfg := testConfig(t)
	cfg.Embedder = "learned"
	cfg.VectorCandidates = 40
	cfg.EmbedLearnedDim = 2 // two topics; more dimensions would keep car and automobile apart in so small a corpus
	a := openApp(t, cfg)
	ingest(t, a, motorCorpus())
	if p := ask(t, a, h4r.QueryHybrid, "car"); p.Sources[h4r.GenVector].Candidates != 0 || p.Status != h4r.StatusOK || len(p.Results) == 0 {
		t.Errorf("hybrid before learning: status %s, sources %v, %d results; want full-text results alone",
			p.Status, p.Sources, len(p.Results))
	}
	if n, err := a.VectorCount(t.Context()); err != nil || n != 0 {
		t.Fatalf("vectors before learning = %d, %v; want none", n, err)
	}
	n, err := a.LearnEmbedder(t.Context())
	if err != nil || n != 120 {
		t.Fatalf("LearnEmbedder = %d, %v; want 120 items embedded", n, err)
	}
	// Thirty car texts rank first (they say car); a pack of forty holds
	// ten more.
	found := semanticIDs(t, a, "car")
	var autos, seas int
	for _, id := range found {
		switch id[:3] {
		case "aut":
			autos++
		case "sea":
			seas++
		}
	}
	if autos == 0 || seas > 0 {
		t.Errorf("semantic \"car\" = %v: %d automobile texts (which never say car; want some) and %d sea texts (want none)", found, autos, seas)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	b := openApp(t, cfg)
	if n, err := b.VectorCount(t.Context()); err != nil || n != 120 {
		t.Fatalf("vectors after a restart = %d, %v; want 120 (the saved model's)", n, err)
	}
	if again := semanticIDs(t, b, "car"); !slices.Equal(again, found) {
		t.Errorf("after a restart semantic \"car\" = %v, before %v: the saved model should answer alike", again, found)
	}
}

// A first start over a corpus that has no model learns one before
// answering.
func TestLearnedEmbedderFirstStartOverACorpus(t *testing.T) {
	cfg := testConfig(t)
	cfg.Embedder = "hash"
	ingest(t, openApp(t, cfg), motorCorpus())
	cfg.Embedder = "learned"
	a := openApp(t, cfg)
	if n, err := a.VectorCount(t.Context()); err != nil || n != 120 {
		t.Fatalf("vectors after the first start = %d, %v; want 120", n, err)
	}
	if n, err := app.RebuildVectors(t.Context(), a, nil); err != nil || n != 120 {
		t.Fatalf("RebuildVectors = %d, %v; want 120", n, err)
	}
}

// H4R_EMBEDDER=none: nothing is embedded, there is no vector index, and
// hybrid and semantic queries are answered by full-text search, saying so.
func TestEmbedderNone(t *testing.T) {
	cfg := testConfig(t)
	cfg.Embedder = "none"
	a := openApp(t, cfg)
	ingest(t, a, memories())
	tests := []struct {
		name string
		typ  h4r.QueryType
		warn string
	}{
		{"hybrid", h4r.QueryHybrid, "hybrid query was answered by full-text search alone"},
		{"no type named (hybrid, the default)", "", "hybrid query was answered by full-text search alone"},
		{"semantic", h4r.QuerySemantic, "semantic query was answered by full-text search"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ask(t, a, tt.typ, "login selector")
			if !hasWarning(p, tt.warn) || p.Status != h4r.StatusOK {
				t.Errorf("status %s, warnings %q; want ok and %q", p.Status, p.Explainability.Warnings, tt.warn)
			}
			if !slices.Contains(resultIDs(p), "login") {
				t.Errorf("results %v: full-text search should find login", resultIDs(p))
			}
			if _, ok := p.Sources[h4r.GenVector]; ok {
				t.Errorf("sources %v: a vector generator ran", p.Sources)
			}
		})
	}
	if n, err := a.VectorCount(t.Context()); err != nil || n != 0 {
		t.Errorf("VectorCount = %d, %v; want 0", n, err)
	}
	if _, err := app.RebuildVectors(t.Context(), a, nil); err == nil {
		t.Error("RebuildVectors with vectors off: want an error")
	}
}
