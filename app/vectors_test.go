package app_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/store/qdrant/qdranttest"
	"github.com/h4r/h4r/store/sqlite"
)

var quiet = slog.New(slog.DiscardHandler)

// testConfig is the default configuration on a store in a new temporary
// directory.
func testConfig(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	return cfg
}

// hashConfig is testConfig with the hashing embedder and the fusion
// settings chosen for it (vector share 0.1, at most 20 vector hits), for
// tests of what its character n-grams catch.
func hashConfig(t *testing.T) config.Config {
	cfg := testConfig(t)
	cfg.Embedder, cfg.FusionVector, cfg.VectorCandidates = "hash", 0.1, 20
	return cfg
}

// openApp opens the service as the CLI does, on a store in a temporary
// directory, with deadlines patient enough that load never decides a test.
func openApp(t *testing.T, cfg config.Config) *app.App {
	t.Helper()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(t.Context(), cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

// memories: the query "authentcation" (a typo) shares no word with any of
// them, so full-text search finds nothing; the character n-grams of the
// hashing embedder find the authentication item.
func memories() []h4r.Item {
	return []h4r.Item{
		{ID: "auth", Kind: "incident", Text: "authentication token expired for the checkout service"},
		{ID: "login", Kind: "test_failure", Text: "login button selector not found on the page"},
		{ID: "cache", Kind: "note", Text: "cache eviction policy for hot keys"},
	}
}

func ingest(t *testing.T, a *app.App, items []h4r.Item) {
	t.Helper()
	if _, err := a.Store.Upsert(t.Context(), items); err != nil {
		t.Fatal(err)
	}
}

func ask(t *testing.T, a *app.App, typ h4r.QueryType, text string) *h4r.Pack {
	t.Helper()
	p, err := a.Engine.ContextPack(t.Context(), h4r.Specialist{ID: "t", SecurityLevel: h4r.Internal},
		&h4r.ContextRequest{Query: h4r.Query{Type: typ, Text: text}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func resultIDs(p *h4r.Pack) []string {
	var out []string
	for _, r := range p.Results {
		out = append(out, r.ID)
	}
	return out
}

func hasWarning(p *h4r.Pack, part string) bool {
	return slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, part) })
}

// With zero setup (built-in embedder, vectors in the SQLite store) the
// query type picks the generators: keyword full-text only, semantic
// vectors only, hybrid both.
func TestQueryTypesWithBuiltInVectors(t *testing.T) {
	a := openApp(t, hashConfig(t))
	ingest(t, a, memories())
	for _, tc := range []struct {
		typ         h4r.QueryType
		query       string
		wantSources []string
		wantAuth    bool
	}{
		{h4r.QueryKeyword, "authentcation", []string{h4r.GenFullText}, false},
		{h4r.QuerySemantic, "authentcation", []string{h4r.GenVector}, true},
		{h4r.QueryHybrid, "authentcation", []string{h4r.GenFullText, h4r.GenVector}, true},
		{h4r.QueryHybrid, "login selector", []string{h4r.GenFullText, h4r.GenVector}, false},
		{"", "authentcation", []string{h4r.GenFullText, h4r.GenVector}, true}, // no type named: hybrid
	} {
		t.Run(cmp.Or(string(tc.typ), "default")+" "+tc.query, func(t *testing.T) {
			p := ask(t, a, tc.typ, tc.query)
			var got []string
			for name := range p.Sources {
				if name != h4r.GenGraph {
					got = append(got, name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.wantSources) {
				t.Errorf("sources %v, want %v", got, tc.wantSources)
			}
			if slices.Contains(resultIDs(p), "auth") != tc.wantAuth {
				t.Errorf("results %v: auth found = %v, want %v", resultIDs(p), !tc.wantAuth, tc.wantAuth)
			}
			if hasWarning(p, "no vector generator") || p.Status != h4r.StatusOK {
				t.Errorf("status %s, warnings %q", p.Status, p.Explainability.Warnings)
			}
		})
	}
}

// filler makes a text long, so that one shared word moves its vector little.
const filler = "harbour lantern meadow orchard pebble quarry ribbon saddle timber umbrella velvet walnut yonder zephyr anchor bramble cobble dapple"

// H4R_FUSION and H4R_FUSION_VECTOR_WEIGHT reach the ranker: the relevance
// of an item only the vector generator found, ranked first by it, is the
// vector share under either method.
func TestFusionSettings(t *testing.T) {
	for _, tc := range []struct {
		method string
		weight float64
		want   float64
	}{
		{"relative", 0, 0},
		{"relative", 0.3, 0.3},
		{"relative", 1, 1},
		{"rrf", 0.5, 0.5},
		{"rrf", 0.2, 0.2},
	} {
		t.Run(fmt.Sprintf("%s vector weight %.1f", tc.method, tc.weight), func(t *testing.T) {
			cfg := hashConfig(t)
			cfg.Fusion, cfg.FusionVector = tc.method, tc.weight
			a := openApp(t, cfg)
			ingest(t, a, append(memories(), h4r.Item{ID: "zqx", Text: "zqx " + filler}))
			// Full-text finds zqx alone (the only exact word); the vector
			// generator ranks auth first (typos share most n-grams).
			const query = "authentcation tokn expird servce zqx"
			h, err := embed.NewHash(embed.WithHashDim(cfg.EmbedDim))
			if err != nil {
				t.Fatal(err)
			}
			vecs, err := a.Store.(*sqlite.Store).SearchVectors(t.Context(), h.Model(), h.Vector(query), h4r.Filters{}, 10, embed.DefaultMinScore)
			if err != nil || len(vecs) == 0 || vecs[0].Item.ID != "auth" {
				t.Fatalf("precondition: the vector search must rank auth first, got %v, %v", vecs, err)
			}
			p := ask(t, a, h4r.QueryHybrid, query)
			if p.Sources[h4r.GenFullText].Candidates != 1 {
				t.Fatalf("precondition: full-text must find zqx alone, found %d", p.Sources[h4r.GenFullText].Candidates)
			}
			var rel = -1.0
			for _, it := range p.Explainability.Items {
				if it.ID == "auth" {
					rel = it.Signals[h4r.Relevance]
				}
			}
			if rel < 0 {
				t.Fatalf("auth not among the candidates: %v", resultIDs(p))
			}
			if d := rel - tc.want; d > 1e-9 || d < -1e-9 {
				t.Errorf("relevance of the vector-only hit = %v, want %v", rel, tc.want)
			}
		})
	}
}

// embeddingsServer is an OpenAI-compatible /v1/embeddings server whose
// mode can be switched: answer, fail with 500, or hang.
type embeddingsServer struct {
	mode atomic.Value // "ok", "fail", "hang"
	hash *embed.Hash
	url  string
}

func newEmbeddingsServer(t *testing.T) *embeddingsServer {
	h, err := embed.NewHash(embed.WithHashDim(32))
	if err != nil {
		t.Fatal(err)
	}
	s := &embeddingsServer{hash: h}
	s.mode.Store("ok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		// The body is read first: net/http notices a client that gave up
		// (and cancels r.Context()) only once the body is consumed.
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch s.mode.Load() {
		case "fail":
			http.Error(w, `{"error":{"message":"model crashed"}}`, http.StatusInternalServerError)
			return
		case "hang":
			<-r.Context().Done()
			return
		}
		type datum struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []datum
		for i, text := range req.Input {
			data = append(data, datum{Index: i, Embedding: s.hash.Vector(text)})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/v1"
	return s
}

// A failed or late query embedding degrades the request to full-text with
// a warning; it never fails it. Items ingested while the server fails are
// stored all the same.
func TestEmbeddingFailureDegradesToFullText(t *testing.T) {
	srv := newEmbeddingsServer(t)
	cfg := hashConfig(t)
	cfg.Embedder, cfg.EmbedURL, cfg.EmbedModel = "openai", srv.url, "test-model"
	cfg.EmbedTimeout = 50 * time.Millisecond
	cfg.EmbedCacheSize = 0
	a := openApp(t, cfg)
	ingest(t, a, memories()[:2])
	srv.mode.Store("fail")
	ingest(t, a, memories()[2:])
	if n, err := a.Store.Count(t.Context()); err != nil || n != 3 {
		t.Fatalf("Count = %d, %v; items written while embedding failed must be stored", n, err)
	}
	for _, mode := range []string{"fail", "hang"} {
		for _, typ := range []h4r.QueryType{h4r.QuerySemantic, h4r.QueryHybrid} {
			t.Run(mode+" "+string(typ), func(t *testing.T) {
				srv.mode.Store(mode)
				p := ask(t, a, typ, "login selector")
				if !slices.Contains(resultIDs(p), "login") {
					t.Errorf("results %v, want the full-text hit login", resultIDs(p))
				}
				if !hasWarning(p, "query embedding") {
					t.Errorf("warnings %q, want one about the query embedding", p.Explainability.Warnings)
				}
			})
		}
	}
	srv.mode.Store("ok")
	if p := ask(t, a, h4r.QuerySemantic, "login selector"); hasWarning(p, "query embedding") || !slices.Contains(resultIDs(p), "login") {
		t.Errorf("after recovery: results %v, warnings %q", resultIDs(p), p.Explainability.Warnings)
	}
}

// With QDRANT_URL, writes are mirrored to Qdrant and vector candidates come
// from it; h4r reindex rebuilds the collection from the store.
func TestQdrantEndToEnd(t *testing.T) {
	q, url := qdranttest.Start(t)
	cfg := hashConfig(t)
	cfg.QdrantURL = url
	a := openApp(t, cfg)
	ingest(t, a, memories())
	if n := q.PointCount(cfg.QdrantCollection); n != 3 {
		t.Fatalf("%d points after ingest, want 3", n)
	}
	p := ask(t, a, h4r.QuerySemantic, "authentcation")
	if !slices.Contains(resultIDs(p), "auth") || p.Sources[h4r.GenVector].Candidates == 0 {
		t.Fatalf("semantic results %v, sources %+v", resultIDs(p), p.Sources)
	}
	if err := a.Store.Delete(t.Context(), "auth"); err != nil {
		t.Fatal(err)
	}
	if n := q.PointCount(cfg.QdrantCollection); n != 2 {
		t.Fatalf("%d points after delete, want 2", n)
	}
	// A failed mirror write does not fail the ingest.
	q.Mu.Lock()
	q.FailUpserts = 1
	q.Mu.Unlock()
	ingest(t, a, []h4r.Item{{ID: "late", Text: "written while Qdrant failed"}})
	if n, _ := a.Store.Count(t.Context()); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
	var progress []int
	n, err := app.RebuildVectors(t.Context(), a, func(done int) { progress = append(progress, done) })
	if err != nil || n != 3 || len(progress) == 0 {
		t.Fatalf("RebuildVectors = %d, %v (progress %v)", n, err, progress)
	}
	if c := q.PointCount(cfg.QdrantCollection); c != 3 {
		t.Fatalf("%d points after reindex, want 3", c)
	}
}

// A collection of another dimension stops the service at start.
func TestQdrantDimensionMismatchRefused(t *testing.T) {
	_, url := qdranttest.Start(t)
	cfg := hashConfig(t)
	cfg.QdrantURL = url
	openApp(t, cfg).Close()
	cfg.EmbedDim = 256
	_, err := app.Open(t.Context(), cfg, app.WithLogger(quiet))
	if err == nil || !strings.Contains(err.Error(), "512 dimensions, but the embedder makes 256") {
		t.Fatalf("err = %v, want the dimension mismatch", err)
	}
}

// Changing the embedder leaves the stored vectors of the old model unused
// until h4r reindex.
func TestRebuildVectorsEmbedded(t *testing.T) {
	cfg := hashConfig(t)
	ingest(t, openApp(t, cfg), memories())
	cfg.EmbedDim = 128
	a := openApp(t, cfg)
	if p := ask(t, a, h4r.QuerySemantic, "authentcation"); len(p.Results) != 0 {
		t.Fatalf("vectors of the old model answered: %v", resultIDs(p))
	}
	n, err := app.RebuildVectors(t.Context(), a, nil)
	if err != nil || n != 3 {
		t.Fatalf("RebuildVectors = %d, %v", n, err)
	}
	if p := ask(t, a, h4r.QuerySemantic, "authentcation"); !slices.Contains(resultIDs(p), "auth") {
		t.Fatalf("after reindex: %v", resultIDs(p))
	}
}

// fixedVectorsServer is an OpenAI-compatible /v1/embeddings server that
// answers fixed vectors chosen by the test, so that what the vector
// generator and the fusion do with them can be predicted exactly; a text
// it was not given gets a vector orthogonal to all of them.
func fixedVectorsServer(t *testing.T, vectors map[string][]float32) (url string, asked func() []string) {
	var mu sync.Mutex
	var inputs []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "fixed-model" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		inputs = append(inputs, req.Input...)
		mu.Unlock()
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []datum
		for i, text := range req.Input {
			v, ok := vectors[text]
			if !ok {
				v = []float32{0, 0, 0, 1}
			}
			data = append(data, datum{Object: "embedding", Index: i, Embedding: v})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(inputs)
	}
}

// Hybrid and semantic queries with H4R_EMBEDDER=openai use the vectors the
// server answers, through the whole pipeline: "vec-only" shares no word
// with the query but has the query's vector, so keyword misses it, semantic
// ranks it first (then "both", at cosine 0.71), and hybrid fuses it in
// below the full-text hits, at the vector share of relevance
// (H4R_FUSION_VECTOR_WEIGHT 0.1, full text 0.9).
func TestHybridWithFixedVectorsFromAnOpenAIServer(t *testing.T) {
	const s = 0.70710677
	items := []h4r.Item{
		{ID: "ft-only", Kind: "note", Text: "quartz quartz"},
		{ID: "both", Kind: "note", Text: "quartz survey notes from the northern ridge"},
		{ID: "vec-only", Kind: "note", Text: "geology field report"},
	}
	url, asked := fixedVectorsServer(t, map[string][]float32{
		"quartz":        {0, 1, 0, 0},
		"quartz quartz": {1, 0, 0, 0},
		"quartz survey notes from the northern ridge": {s, s, 0, 0},
		"geology field report":                        {0, 1, 0, 0},
	})
	cfg := hashConfig(t) // its fusion settings: vector share 0.1
	cfg.Embedder, cfg.EmbedURL, cfg.EmbedModel = "openai", url, "fixed-model"
	cfg.EmbedCacheSize = 0
	a := openApp(t, cfg)
	ingest(t, a, items)

	relevance := func(p *h4r.Pack) map[string]float64 {
		out := map[string]float64{}
		for _, it := range p.Explainability.Items {
			out[it.ID] = it.Signals[h4r.Relevance]
		}
		return out
	}
	t.Run("keyword misses the item only its vector finds", func(t *testing.T) {
		if got := resultIDs(ask(t, a, h4r.QueryKeyword, "quartz")); slices.Contains(got, "vec-only") || len(got) != 2 {
			t.Errorf("results %v, want ft-only and both", got)
		}
	})
	t.Run("semantic ranks by the served vectors", func(t *testing.T) {
		p := ask(t, a, h4r.QuerySemantic, "quartz")
		if got := resultIDs(p); len(got) < 2 || got[0] != "vec-only" || got[1] != "both" {
			t.Errorf("results %v, want vec-only then both", got)
		}
		if !slices.Contains(asked(), "quartz") {
			t.Errorf("the server was asked %q, not the query", asked())
		}
	})
	t.Run("hybrid fuses both generators", func(t *testing.T) {
		p := ask(t, a, h4r.QueryHybrid, "quartz")
		if hasWarning(p, "embedding") || p.Status != h4r.StatusOK {
			t.Fatalf("status %s, warnings %q", p.Status, p.Explainability.Warnings)
		}
		got := resultIDs(p)
		if len(got) != 3 || got[0] != "ft-only" {
			t.Fatalf("results %v, want ft-only first, then the other two", got)
		}
		rel := relevance(p)
		// Relative fusion: Σ w·minmax(score) / Σ w, with full text's weight
		// 0.9 and vectors' 0.1; vec-only is the vector generator's best (1)
		// and no full-text hit (0).
		if want := 0.1; math.Abs(rel["vec-only"]-want) > 0.005 {
			t.Errorf("vec-only relevance %.4f, want the vector share %.4f", rel["vec-only"], want)
		}
		if rel["ft-only"] <= rel["vec-only"] || rel["vec-only"] <= 0 {
			t.Errorf("relevance %v: want ft-only > vec-only > 0", rel)
		}
	})
}

// TestVectorCount: GET /v1/stats' qdrant_vectors comes from App.VectorCount,
// the vectors of whichever index serves vector search (it was always 0:
// nothing counted them).
func TestVectorCount(t *testing.T) {
	for _, tc := range []struct {
		name   string
		qdrant bool
	}{
		{"store's own vectors", false},
		{"Qdrant points", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := hashConfig(t)
			if tc.qdrant {
				_, cfg.QdrantURL = qdranttest.Start(t)
			}
			a := openApp(t, cfg)
			if n, err := a.VectorCount(t.Context()); err != nil || n != 0 {
				t.Fatalf("empty: VectorCount = %d, %v; want 0", n, err)
			}
			ingest(t, a, memories())
			if n, err := a.VectorCount(t.Context()); err != nil || n != len(memories()) {
				t.Fatalf("VectorCount = %d, %v; want %d", n, err, len(memories()))
			}
			if err := a.Store.Delete(t.Context(), "auth"); err != nil {
				t.Fatal(err)
			}
			if n, err := a.VectorCount(t.Context()); err != nil || n != len(memories())-1 {
				t.Fatalf("after a delete: VectorCount = %d, %v; want %d", n, err, len(memories())-1)
			}
		})
	}
}
