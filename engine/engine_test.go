package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/pack"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/scs"
	"github.com/h4r/h4r/store/sqlite"
	"github.com/h4r/h4r/tokens"
)

// demoNow is the clock of every test here: the demo corpus is dated
// relative to 2026-11-21, so recency (and rankings) are reproducible.
var demoNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func fixedClock() time.Time { return demoNow }

// healer is the specialist of the README's first request.
func healer() h4r.Specialist {
	return h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}}
}

// testConfig is the default configuration over a temporary store, with
// deadlines no test machine misses.
func testConfig(tb testing.TB) config.Config {
	cfg := config.Default()
	cfg.DataDir = tb.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout, cfg.WriteTimeout = patient, patient, patient
	return cfg
}

// openDemo builds the production wiring over a fresh store holding the demo
// corpus.
func openDemo(tb testing.TB) *app.App {
	tb.Helper()
	cfg := testConfig(tb)
	a, err := app.Open(context.Background(), cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	if n, err := demo.LoadIfEmpty(context.Background(), a.Store); err != nil || n == 0 {
		tb.Fatalf("loading the demo corpus: %d items, %v", n, err)
	}
	if _, err := a.LearnEmbedder(context.Background()); err != nil { // as h4r serve does after loading it
		tb.Fatal(err)
	}
	return a
}

// auditPack answers req for spec as a caller that may audit: the pack
// explains every candidate, those policy denied included.
func auditPack(t testing.TB, e *engine.Engine, spec h4r.Specialist, req h4r.ContextRequest) *h4r.Pack {
	t.Helper()
	if req.Explain == "" {
		req.Explain = h4r.ExplainAll
	}
	plan, err := req.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	plan.Audit = true
	p, err := e.Run(context.Background(), spec, plan)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func resultIDs(p *h4r.Pack) []string {
	ids := make([]string, len(p.Results))
	for i, r := range p.Results {
		ids[i] = r.ID
	}
	return ids
}

func explained(p *h4r.Pack, id string) (h4r.ItemExplanation, bool) {
	for _, it := range p.Explainability.Items {
		if it.ID == id {
			return it, true
		}
	}
	return h4r.ItemExplanation{}, false
}

// TestDemoPack checks the README's first request: every part of a pack is
// at work on it.
func TestDemoPack(t *testing.T) {
	a := openDemo(t)
	items, err := demo.Items()
	if err != nil {
		t.Fatal(err)
	}
	yes := true // the graph is off unless asked for (CONTEXT_PACK_INCLUDE_GRAPH)
	req := h4r.ContextRequest{
		Query:        h4r.Query{Text: "login test failures with selector issues"},
		Budget:       &h4r.Budget{MaxTokens: 2500},
		IncludeGraph: &yes,
	}
	p := auditPack(t, a.Engine, healer(), req)
	if p.Status != h4r.StatusOK {
		t.Errorf("status = %q, warnings %v", p.Status, p.Explainability.Warnings)
	}
	body, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}

	// Policy drops: every credential item and every sensitivity > 0.7 item
	// the query reached is left out with reason policy, and its text is
	// nowhere in the pack.
	var credentials, sensitive, pii int
	for _, it := range items {
		m := it.Metadata
		ex, reached := explained(p, it.ID)
		switch {
		case m.HasCredentials || m.SensitivityValue() > 0.7:
			if !reached {
				continue
			}
			if m.HasCredentials {
				credentials++
			} else {
				sensitive++
			}
			if ex.Reason != h4r.ReasonPolicy {
				t.Errorf("%s (credentials %v, sensitivity %v): reason %q, want policy", it.ID, m.HasCredentials, m.SensitivityValue(), ex.Reason)
			}
			if strings.Contains(string(body), it.Text) {
				t.Errorf("the text of %s appears in the pack", it.ID)
			}
		case m.ContainsPII && slices.Contains(m.PIIFields, "$.content.personalData"):
			if !reached || ex.Reason != h4r.ReasonKept {
				continue
			}
			pii++
			raw, _ := json.Marshal(it.Content["personalData"])
			if strings.Contains(string(body), string(raw)) {
				t.Errorf("personal data of %s appears in the pack: %s", it.ID, raw)
			}
			// Its text is not marked clean, so it is redacted too.
			if strings.Contains(string(body), it.Text) {
				t.Errorf("the text of %s, which has PII, appears in the pack", it.ID)
			}
			if !ex.Redacted {
				t.Errorf("%s: kept without redaction", it.ID)
			}
		}
	}
	if credentials == 0 || sensitive == 0 || pii == 0 {
		t.Errorf("the query reached %d credential, %d sensitive and %d kept PII items; want at least one of each", credentials, sensitive, pii)
	}

	// Without audit the same pack is delivered, and what policy denied is
	// only counted.
	plain, err := a.Engine.ContextPack(context.Background(), healer(), &req)
	if err != nil {
		t.Fatal(err)
	}
	got, want := resultIDs(plain), resultIDs(p)
	if !slices.Equal(got, want) || plain.Explainability.Slicing.TotalDroppedPolicy != p.Explainability.Slicing.TotalDroppedPolicy {
		t.Errorf("without audit: results %v, %d dropped by policy; want %v, %d", got, plain.Explainability.Slicing.TotalDroppedPolicy, want, p.Explainability.Slicing.TotalDroppedPolicy)
	}
	for _, it := range plain.Explainability.Items {
		if it.Reason == h4r.ReasonPolicy || it.Reason == h4r.ReasonMinScore {
			t.Errorf("without audit the pack explains %s (%s)", it.ID, it.Reason)
		}
	}

	for _, r := range p.Results {
		if r.Signals == nil {
			t.Errorf("%s: no signals", r.ID)
		}
		if !strings.HasPrefix(r.Explanation, "Score ") {
			t.Errorf("%s: explanation %q", r.ID, r.Explanation)
		}
		if r.Metadata.Redacted && r.Content["personalData"] != h4r.RedactionMarker {
			t.Errorf("%s: personalData = %v, want the redaction marker", r.ID, r.Content["personalData"])
		}
	}
	if p.Explainability.Slicing.TotalDroppedBudget == 0 {
		t.Error("a 2500-token budget dropped nothing")
	}
	if used := p.Explainability.Slicing.BudgetUsed.EstimatedTokens; used > 2500 {
		t.Errorf("budget used %d tokens, limit 2500", used)
	}
	if len(p.Explainability.Affordances) == 0 {
		t.Error("no affordance")
	}
	if g := p.Explainability.CausalGraph; g == nil || len(g.Edges) == 0 {
		t.Error("no causal graph edges among the evidence")
	}
	if len(p.Explainability.TLDR.Citations) == 0 {
		t.Error("TL;DR has no citations")
	}
}

// failingGenerator stands in for a backend that is down or slow; it is an
// implementation of the generator contract, not a mock of a component.
type failingGenerator struct {
	name  string
	block bool // wait for the deadline instead of failing at once
}

func (g failingGenerator) Name() string { return g.name }

func (g failingGenerator) Generate(ctx context.Context, _ h4r.CandidateQuery) ([]h4r.Hit, error) {
	if g.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, errors.New("connection refused")
}

// patient is the generator deadline of tests whose outcome must not depend
// on the machine's load (-race on two busy cores is slow).
const patient = time.Minute

// newEngine builds an engine over the demo store with the given generator
// deadline, extra text generators and options.
func newEngine(tb testing.TB, a *app.App, generatorTimeout time.Duration, extra []h4r.Generator, opts ...engine.Option) *engine.Engine {
	tb.Helper()
	e, err := engine.New(append([]engine.Option{
		engine.WithTextGenerators(append([]h4r.Generator{a.Store.FullText()}, extra...)...),
		engine.WithGraphGenerator(a.Store.Graph()),
		engine.WithSlicer(productionSlicer(tb)),
		engine.WithPackBuilder(pack.NewBuilder()),
		engine.WithClock(fixedClock),
		engine.WithSettings(shippedSettings(generatorTimeout)),
	}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// productionSlicer is the slicer the service runs: the bundled policy and
// the cl100k token counter.
func productionSlicer(tb testing.TB) *scs.Slicer {
	tb.Helper()
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		tb.Fatal(err)
	}
	pol, err := policy.New(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return scs.New(pol, counter)
}

// shippedSettings are the shipped weights, recency decay and budgets, with
// generators given generatorTimeout.
func shippedSettings(generatorTimeout time.Duration) engine.Settings {
	cfg := config.Default()
	return engine.Settings{
		Weights: cfg.Weights, Lambda: cfg.RecencyDecayLambda,
		Budget:           scs.Limits{MaxBytes: cfg.MaxBytesDefault, MaxTokens: cfg.MaxTokensDefault, MaxItems: cfg.MaxItemsDefault},
		GeneratorTimeout: generatorTimeout,
	}
}

func TestFailedGeneratorDegradesThePack(t *testing.T) {
	a := openDemo(t)
	tests := []struct {
		name        string
		gen         failingGenerator
		timeout     time.Duration // every generator's deadline; full-text must make it even under -race on a loaded machine
		wantWarning string
	}{
		{"generator error", failingGenerator{name: h4r.GenVector}, patient, "connection refused"},
		{"generator past its deadline", failingGenerator{name: h4r.GenVector, block: true}, 2 * time.Second, "timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, a, tt.timeout, []h4r.Generator{tt.gen})
			p, err := e.ContextPack(context.Background(), healer(), &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: "login selector"}})
			if err != nil {
				t.Fatalf("a failed optional generator failed the request: %v", err)
			}
			if p.Status != h4r.StatusDegraded {
				t.Errorf("status = %q, want degraded", p.Status)
			}
			if len(p.Results) == 0 {
				t.Error("no results although full-text worked")
			}
			if s := p.Sources[h4r.GenVector]; !strings.Contains(s.Error, tt.wantWarning) {
				t.Errorf("sources.vector.error = %q, want it to mention %q", s.Error, tt.wantWarning)
			}
			if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "vector") }) {
				t.Errorf("warnings %v do not name the vector generator", p.Explainability.Warnings)
			}
		})
	}
}

func TestExpiredRequestDeadlineDegradesInsteadOfFailing(t *testing.T) {
	a := openDemo(t)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	p, err := a.Engine.ContextPack(ctx, healer(), &h4r.ContextRequest{Query: h4r.Query{Text: "login"}})
	if err != nil {
		t.Fatalf("an expired deadline failed the request: %v", err)
	}
	if p.Status != h4r.StatusDegraded {
		t.Errorf("status = %q, want degraded", p.Status)
	}
	if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "deadline") }) {
		t.Errorf("warnings %v do not mention the deadline", p.Explainability.Warnings)
	}
}

func TestCausalHops(t *testing.T) {
	a := openDemo(t)
	items, err := demo.Items()
	if err != nil {
		t.Fatal(err)
	}
	// Pick an anchor with links of a type hops follow by default
	// (H4R_CAUSAL_LINK_TYPES), and a query sharing no word with one of its
	// neighbours: that neighbour must still become a candidate.
	causal := config.LinkTypes(config.DefaultCausalLinkTypes)
	var anchor h4r.Item
	for _, it := range items {
		if len(it.Links) > 0 && slices.Contains(causal, it.Links[0].Type) && !it.Metadata.HasCredentials && it.Metadata.SensitivityValue() <= 0.7 && len(it.Metadata.RestrictedToGroups) == 0 {
			anchor = it
			break
		}
	}
	neighbour := anchor.Links[0].Target

	tests := []struct {
		name        string
		req         h4r.ContextRequest
		wantSources []string
	}{
		{"causal query driven by anchors alone", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: []string{anchor.ID}, Limit: 50}, []string{h4r.GenGraph}},
		{"keyword query with anchors", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryKeyword, Text: "zzzz-no-such-word"}, Anchors: []string{anchor.ID}, Limit: 50}, []string{h4r.GenFullText, h4r.GenGraph}},
		{"hybrid query with anchors", h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: "zzzz-no-such-word"}, Anchors: []string{anchor.ID}, Limit: 50}, []string{h4r.GenFullText, h4r.GenGraph, h4r.GenVector}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Engine.ContextPack(context.Background(), h4r.Specialist{ID: "admin", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{"qa", "security"}}, &tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for name := range p.Sources {
				got = append(got, name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantSources) {
				t.Errorf("sources = %v, want %v", got, tt.wantSources)
			}
			for id, want := range map[string]float64{anchor.ID: 0, neighbour: 0.5} { // an anchor gets no causality for itself
				ex, ok := explained(p, id)
				if !ok {
					t.Errorf("%s was not a candidate", id)
					continue
				}
				if got := ex.Signals[h4r.Causality]; got != want {
					t.Errorf("%s: causality = %v, want %v", id, got, want)
				}
			}
		})
	}
}

// TestHopsStartOnlyFromPermittedAnchors: links are never followed from an
// anchor the specialist may not see (ci-env-dump-18342 holds credentials;
// rb-rotate-ci-token links to it): hops from it would deliver what it
// links to and so tell of its links. From a permitted anchor, hops go on
// as before, and reach the denied item as a candidate that policy drops.
// Without the check the denied anchor's neighbours would be delivered.
// The demo links the runbook to the leak by follows, which hops leave out
// by default (H4R_CAUSAL_LINK_TYPES): the requests name it.
func TestHopsStartOnlyFromPermittedAnchors(t *testing.T) {
	a := openDemo(t)
	tests := []struct {
		name    string
		anchors []string
		reached []string // candidates found by hops
	}{
		{"a denied anchor", []string{"ci-env-dump-18342"}, nil},
		{"a denied and a missing anchor", []string{"ci-env-dump-18342", "no-such-item"}, nil},
		{"a permitted anchor", []string{"rb-rotate-ci-token"}, []string{"ci-env-dump-18342", "rb-rotate-ci-token"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := auditPack(t, a.Engine, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal}, Anchors: tt.anchors, MaxHops: 1, LinkTypes: []string{"follows"}})
			var reached []string
			for _, it := range p.Explainability.Items {
				reached = append(reached, it.ID)
			}
			slices.Sort(reached)
			if !slices.Equal(reached, tt.reached) {
				t.Errorf("hops reached %v, want %v", reached, tt.reached)
			}
			if st, ok := p.Sources[h4r.GenGraph]; !ok || st.Error != "" || p.Status != h4r.StatusOK {
				t.Errorf("graph generator %+v (ran: %v), status %s: want it run, without error, as for any anchor", st, ok, p.Status)
			}
		})
	}
}

func TestMinScoreAndBudgetClamp(t *testing.T) {
	a := openDemo(t)
	p := auditPack(t, a.Engine, healer(), h4r.ContextRequest{
		Query:    h4r.Query{Text: "login test failures"},
		MinScore: 0.6,
		Budget:   &h4r.Budget{MaxTokens: 1 << 30},
		Limit:    100,
	})
	dropped := 0
	for _, it := range p.Explainability.Items {
		if it.Score < 0.6 && it.Reason != h4r.ReasonMinScore {
			t.Errorf("%s: score %.3f under min_score but reason %q", it.ID, it.Score, it.Reason)
		}
		if it.Reason == h4r.ReasonMinScore {
			dropped++
		}
	}
	if dropped == 0 || dropped != p.Explainability.Slicing.TotalDroppedScore {
		t.Errorf("min_score dropped %d items, slicing stats say %d", dropped, p.Explainability.Slicing.TotalDroppedScore)
	}
	for _, r := range p.Results {
		if r.Score < 0.6 {
			t.Errorf("result %s has score %.3f under min_score", r.ID, r.Score)
		}
	}
	if got := p.Explainability.Slicing.BudgetLimit.EstimatedTokens; got != config.Default().MaxTokensDefault {
		t.Errorf("token limit = %d, want the server's %d", got, config.Default().MaxTokensDefault)
	}
	if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "budget.maxTokens") }) {
		t.Errorf("warnings %v do not say the budget was clamped", p.Explainability.Warnings)
	}
}

func TestRequestWeights(t *testing.T) {
	a := openDemo(t)
	tests := []struct {
		name          string
		weights       map[string]float64
		wantWeights   h4r.Weights
		wantNormWarns bool
	}{
		{"relevance only", map[string]float64{"relevance": 1, "recency": 0, "frequency": 0, "importance": 0, "causality": 0, "novelty": 0, "trust": 0, "sensitivity": 0}, h4r.Weights{1, 0, 0, 0, 0, 0, 0, 0}, false},
		{"partial override is normalised", map[string]float64{"relevance": 1.4}, func() h4r.Weights {
			w := config.Default().Weights
			w[h4r.Relevance] = 1.4
			n, _ := w.Normalized()
			return n
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := a.Engine.ContextPack(context.Background(), healer(), &h4r.ContextRequest{Query: h4r.Query{Text: "login"}, Weights: tt.weights})
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range p.Explainability.Weights {
				if diff := w - tt.wantWeights[i]; diff > 1e-9 || diff < -1e-9 {
					t.Errorf("weight %s = %v, want %v", h4r.Signal(i), w, tt.wantWeights[i])
				}
			}
			warned := slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "normalis") || strings.Contains(w, "normaliz") })
			if warned != tt.wantNormWarns {
				t.Errorf("normalisation warning = %v, want %v (warnings %v)", warned, tt.wantNormWarns, p.Explainability.Warnings)
			}
			if tt.name == "relevance only" {
				for i := 1; i < len(p.Results); i++ {
					if p.Results[i-1].Signals[h4r.Relevance] < p.Results[i].Signals[h4r.Relevance] {
						t.Errorf("relevance-only ranking out of order at %d", i)
					}
				}
			}
		})
	}
}

// TestDeliveriesCountOnlyWhenConfigured: by default (H4R_ACCESS_COUNTING
// use) a delivery is not an access, so frequency does not become a
// popularity loop; with "delivery" every delivered item is counted once,
// and items left out never are.
func TestDeliveriesCountOnlyWhenConfigured(t *testing.T) {
	tests := []struct {
		name     string
		counting string
		wantKept int64
	}{
		{"use (default)", "use", 0},
		{"delivery", "delivery", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			cfg.AccessCounting = tt.counting
			a, err := app.Open(context.Background(), cfg, app.WithClock(fixedClock), app.WithLogger(discardLogger()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := demo.LoadIfEmpty(context.Background(), a.Store); err != nil {
				t.Fatal(err)
			}
			p, err := a.Engine.ContextPack(context.Background(), healer(), &h4r.ContextRequest{Query: h4r.Query{Text: "login selector"}, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Results) == 0 {
				t.Fatal("nothing delivered: the test needs deliveries")
			}
			if err := a.Close(); err != nil { // Close flushes the access counts
				t.Fatal(err)
			}
			store, err := sqlite.Open(context.Background(), filepath.Join(cfg.DataDir, "h4r.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			for _, ex := range p.Explainability.Items {
				it, err := store.Get(context.Background(), ex.ID)
				if err != nil {
					t.Fatal(err)
				}
				want := int64(0)
				if ex.Reason == h4r.ReasonKept {
					want = tt.wantKept
				}
				if it.Metadata.AccessCount != want {
					t.Errorf("%s (%s): accessCount = %d after one pack, want %d", ex.ID, ex.Reason, it.Metadata.AccessCount, want)
				}
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	a := openDemo(t)
	tests := []struct {
		name      string
		req       h4r.ContextRequest
		wantField string
	}{
		{"unknown query type", h4r.ContextRequest{Query: h4r.Query{Type: "fuzzy", Text: "x"}}, "query.type"},
		{"empty text", h4r.ContextRequest{Query: h4r.Query{Text: "  "}}, "query.text"},
		{"negative limit", h4r.ContextRequest{Query: h4r.Query{Text: "x"}, Limit: -1}, "limit"},
		{"unknown weight", h4r.ContextRequest{Query: h4r.Query{Text: "x"}, Weights: map[string]float64{"luck": 1}}, "weights.luck"},
		{"all weights zero", h4r.ContextRequest{Query: h4r.Query{Text: "x"}, Weights: map[string]float64{"relevance": 0, "recency": 0, "frequency": 0, "importance": 0, "causality": 0, "novelty": 0, "trust": 0, "sensitivity": 0}}, "weights"},
		{"bad filter value", h4r.ContextRequest{Query: h4r.Query{Text: "x", Filters: map[string]any{"status": []any{1}}}}, "query.filters.status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := a.Engine.ContextPack(context.Background(), healer(), &tt.req)
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Code != h4r.EINVALID || herr.Field != tt.wantField {
				t.Fatalf("error = %v, want invalid_argument on field %q", err, tt.wantField)
			}
		})
	}
}

// answeredByFallback is a graph generator whose primary failed and whose
// fallback (the real store CTE) answered, as the Neo4j generator does.
type answeredByFallback struct{ fallback h4r.Generator }

func (g answeredByFallback) Name() string { return h4r.GenGraph }

func (g answeredByFallback) Generate(ctx context.Context, q h4r.CandidateQuery) ([]h4r.Hit, error) {
	hits, err := g.fallback.Generate(ctx, q)
	if err != nil {
		return nil, err
	}
	return hits, &h4r.FallbackError{Primary: "neo4j", Fallback: "store CTE", Err: errors.New("connection refused")}
}

func TestFallbackAnswerIsKeptWithAWarning(t *testing.T) {
	a := openDemo(t)
	e, err := engine.New(
		engine.WithTextGenerators(a.Store.FullText()),
		engine.WithGraphGenerator(answeredByFallback{a.Store.Graph()}),
		engine.WithSlicer(productionSlicer(t)),
		engine.WithClock(fixedClock),
		engine.WithSettings(shippedSettings(patient)),
	)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.ContextPack(context.Background(), healer(), &h4r.ContextRequest{Query: h4r.Query{Text: "login selector"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != h4r.StatusOK {
		t.Errorf("status %q: a fallback answer is a complete pack", p.Status)
	}
	if s := p.Sources[h4r.GenGraph]; s.Candidates == 0 || s.Error != "" {
		t.Errorf("graph source %+v: want the fallback's hits and no error", s)
	}
	if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool {
		return strings.Contains(w, "neo4j failed") && strings.Contains(w, "store CTE answered")
	}) {
		t.Errorf("warnings %v do not say the fallback answered", p.Explainability.Warnings)
	}
}

// TestLinkTypesRestrictHops: link_types on a causal request make the walk
// follow only links of those types (rb-login-triage-guide cites two
// precedents and follows one fix); without them it follows the configured
// causal types (H4R_CAUSAL_LINK_TYPES), which leave follows out.
func TestLinkTypesRestrictHops(t *testing.T) {
	a := openDemo(t)
	tests := []struct {
		name      string
		linkTypes []string
		reached   []string
	}{
		{"none named: the configured causal types, follows left out", nil, []string{"dec-locator-strategy", "inc-checkout-selector-break-aug", "rb-login-triage-guide"}},
		{"cites_precedent and follows", []string{"cites_precedent", "follows"}, []string{"dec-locator-strategy", "fix-login-page-object-testids", "inc-checkout-selector-break-aug", "rb-login-triage-guide"}},
		{"cites_precedent only", []string{"cites_precedent"}, []string{"dec-locator-strategy", "inc-checkout-selector-break-aug", "rb-login-triage-guide"}},
		{"follows only", []string{"follows"}, []string{"fix-login-page-object-testids", "rb-login-triage-guide"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := auditPack(t, a.Engine, healer(), h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryCausal},
				Anchors: []string{"rb-login-triage-guide"}, MaxHops: 1, Directed: true, LinkTypes: tt.linkTypes})
			var reached []string
			for _, it := range p.Explainability.Items {
				reached = append(reached, it.ID)
			}
			slices.Sort(reached)
			if !slices.Equal(reached, tt.reached) {
				t.Errorf("hops reached %v, want %v", reached, tt.reached)
			}
		})
	}
}

// gatedGenerator answers once its gate is closed, whatever its context,
// and counts its calls.
type gatedGenerator struct {
	gate  chan struct{}
	calls atomic.Int32
}

func (g *gatedGenerator) Name() string { return h4r.GenVector }

func (g *gatedGenerator) Generate(context.Context, h4r.CandidateQuery) ([]h4r.Hit, error) {
	g.calls.Add(1)
	<-g.gate
	return nil, nil
}

// TestMaxInFlightQueuesPacks: with one slot, a second pack waits for the
// first; one whose deadline passes while it waits comes back empty and
// degraded without running a generator, and the next one after the first
// finished is built.
func TestMaxInFlightQueuesPacks(t *testing.T) {
	a := openDemo(t)
	gen := &gatedGenerator{gate: make(chan struct{})}
	e := newEngine(t, a, patient, []h4r.Generator{gen}, engine.WithMaxInFlight(1), engine.WithLogger(discardLogger()))
	req := func() *h4r.ContextRequest {
		return &h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: "login selector"}}
	}
	first := make(chan *h4r.Pack)
	go func() {
		p, _ := e.ContextPack(t.Context(), healer(), req())
		first <- p
	}()
	for gen.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	second := make(chan *h4r.Pack, 1)
	go func() {
		p, err := e.ContextPack(ctx, healer(), req())
		if err != nil {
			t.Errorf("a pack that waited past its deadline failed: %v", err)
		}
		second <- p
	}()
	var p *h4r.Pack
	select {
	case p = <-second:
	case <-time.After(10 * time.Second):
		close(gen.gate)
		t.Fatalf("the second pack ran instead of waiting: its generator ran %d times", gen.calls.Load())
	}
	switch {
	case p == nil:
		t.FailNow()
	case p.Status != h4r.StatusDegraded || len(p.Results) != 0 || p.Results == nil:
		t.Errorf("waited past its deadline: status %q with %d results (nil: %v), want degraded and empty", p.Status, len(p.Results), p.Results == nil)
	case !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "busy") }):
		t.Errorf("warnings %v do not say the engine was busy", p.Explainability.Warnings)
	case gen.calls.Load() != 1:
		t.Errorf("the generator ran %d times, want once (the waiting pack must not run it)", gen.calls.Load())
	}
	close(gen.gate)
	if p := <-first; p.Status != h4r.StatusOK || len(p.Results) == 0 {
		t.Fatalf("first pack: status %q, %d results", p.Status, len(p.Results))
	}
	if p, err := e.ContextPack(t.Context(), healer(), req()); err != nil || p.Status != h4r.StatusOK || len(p.Results) == 0 {
		t.Fatalf("after the first finished: %v, %+v", err, p)
	}
}

// TestBusyWaitsHalfTheDeadline: with every slot taken, a request waits
// half of its deadline, not all of it, so that the caller still has time to
// act on the answer; one that prefers an error (Plan.BusyError, "Prefer:
// busy=503" over HTTP) gets unavailable instead of the empty pack.
func TestBusyWaitsHalfTheDeadline(t *testing.T) {
	a := openDemo(t)
	e := newEngine(t, a, patient, nil, engine.WithMaxInFlight(1), engine.WithLogger(discardLogger()))
	release := e.HoldSlots()
	defer release()
	if got := e.InFlight(); got != 1 {
		t.Fatalf("InFlight %d with the one slot held, want 1", got)
	}
	for _, tc := range []struct {
		name      string
		busyError bool
	}{
		{"empty_degraded_pack", false},
		{"unavailable_error", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := (&h4r.ContextRequest{Query: h4r.Query{Text: "login selector"}}).Plan("")
			if err != nil {
				t.Fatal(err)
			}
			plan.BusyError = tc.busyError
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			defer cancel()
			p, err := e.Run(ctx, healer(), plan)
			if ctx.Err() != nil {
				t.Fatalf("the answer came after the deadline (%v): the wait must end at half of it", ctx.Err())
			}
			if tc.busyError {
				if h4r.ErrorCode(err) != h4r.EUNAVAILABLE || p != nil {
					t.Fatalf("got pack %v, error %v; want an unavailable error", p, err)
				}
				return
			}
			if err != nil || p.Status != h4r.StatusDegraded || len(p.Results) != 0 {
				t.Fatalf("got %v, %+v; want an empty degraded pack", err, p)
			}
		})
	}
}

// TestExplainKeptOrAll: by default a pack explains its kept items only;
// explain "all" adds every other candidate the caller may learn of, with
// why it was left out. A kept item has the same rank, score and signals
// either way, and the default pack is the smaller one.
func TestExplainKeptOrAll(t *testing.T) {
	a := openDemo(t)
	build := func(explain string) (*h4r.Pack, int) {
		req := h4r.ContextRequest{Query: h4r.Query{Text: "login test failures with selector issues"}, Explain: explain}
		plan, err := req.Plan("")
		if err != nil {
			t.Fatal(err)
		}
		p, err := a.Engine.Run(t.Context(), healer(), plan)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return p, len(raw)
	}
	kept, keptBytes := build("")
	all, allBytes := build(h4r.ExplainAll)
	if len(kept.Results) == 0 || len(kept.Explainability.Items) != len(kept.Results) {
		t.Fatalf("default: %d results, %d explanations; want one explanation per kept item", len(kept.Results), len(kept.Explainability.Items))
	}
	for _, e := range kept.Explainability.Items {
		if e.Reason != h4r.ReasonKept {
			t.Errorf("default pack explains %s, left out (%s)", e.ID, e.Reason)
		}
	}
	byID := map[string]h4r.ItemExplanation{}
	left := 0
	for _, e := range all.Explainability.Items {
		byID[e.ID] = e
		if e.Reason != h4r.ReasonKept {
			left++
		}
	}
	if left == 0 {
		t.Fatal(`explain "all" lists no item that was left out`)
	}
	for _, e := range kept.Explainability.Items {
		if got := byID[e.ID]; got.Rank != e.Rank || got.Score != e.Score || got.Signals != e.Signals {
			t.Errorf("%s: rank %d score %v by default, rank %d score %v with all", e.ID, e.Rank, e.Score, got.Rank, got.Score)
		}
	}
	if keptBytes >= allBytes {
		t.Errorf("default pack %d bytes, with all %d: want the default smaller", keptBytes, allBytes)
	}
	var e *h4r.Error
	if _, err := (&h4r.ContextRequest{Query: h4r.Query{Text: "x"}, Explain: "some"}).Plan(""); !errors.As(err, &e) || e.Field != "explain" {
		t.Errorf(`explain "some": %v, want an error naming explain`, err)
	}
}

// TestLowRelevanceAffordances: on the demo, whatever the query type, a
// query sharing no word with the corpus is answered with
// request_more_context alone (fused scores and character n-grams bring
// back items, which must not trigger keyword rules), and the README's
// query is not.
func TestLowRelevanceAffordances(t *testing.T) {
	a := openDemo(t)
	cases := []struct {
		name  string
		typ   h4r.QueryType
		text  string
		more  bool // request_more_context fires
		alone bool // and nothing else
	}{
		{"nonsense, keyword", h4r.QueryKeyword, "zebra quantum marmalade", true, true},
		{"nonsense, hybrid", h4r.QueryHybrid, "zebra quantum marmalade", true, true},
		{"nonsense, semantic", h4r.QuerySemantic, "zebra quantum marmalade", true, true},
		{"relevant, hybrid", h4r.QueryHybrid, "login test failures with selector issues", false, false},
		{"relevant, semantic", h4r.QuerySemantic, "login test failures with selector issues", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := auditPack(t, a.Engine, healer(), h4r.ContextRequest{Query: h4r.Query{Type: tc.typ, Text: tc.text}})
			var types []string
			for _, af := range p.Explainability.Affordances {
				types = append(types, af.Type)
			}
			more := slices.Contains(types, "request_more_context")
			if more != tc.more || (tc.alone && len(types) != 1) {
				t.Errorf("affordances %v for %q (%s, %d results)", types, tc.text, tc.typ, len(p.Results))
			}
		})
	}
}
