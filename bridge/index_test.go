package bridge_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
	"github.com/h4r/h4r/bridge/bridgetest"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/scs"
)

// scan is the slow path the index replaces, written as plainly as
// possible: every stored trajectory, through the policy, scored against
// the call, the best MaxMatches at or above MinSimilarity.
func scan(t *testing.T, items []*h4r.Item, slicer *scs.Slicer, spec h4r.Specialist, cfg bridge.Config, params map[string]any) []bridge.Match {
	t.Helper()
	out := slicer.Slice(t.Context(), spec, items, scs.Limits{MaxBytes: 1 << 30, MaxTokens: 1 << 30, MaxItems: 1 << 30})
	call := bridge.ExtractSignature("think", params, bridge.TechExtractor{})
	type hit struct {
		m   bridge.Match
		sim float64
	}
	var hits []hit
	for _, v := range out.Verdicts {
		if v.Reason != h4r.ReasonKept {
			continue
		}
		c := v.Delivered.Content
		sig := bridge.ExtractSignature("think", map[string]any{"content": c["description"], "domain": c["domain"]}, bridge.TechExtractor{})
		sim := bridge.ConceptSimilarity(call, sig)
		if sig.Fingerprint == call.Fingerprint {
			sim = 1
		}
		if sim < cfg.MinSimilarity {
			continue
		}
		hits = append(hits, hit{bridge.Match{TrajectoryID: v.Delivered.ID, SessionID: c["session_id"].(string), Summary: c["description"].(string),
			SuccessScore: c["success_score"].(float64), QualityScore: c["quality_score"].(float64)}, sim})
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.sim, a.sim); c != 0 {
			return c
		}
		return cmp.Compare(a.m.TrajectoryID, b.m.TrajectoryID)
	})
	matches := []bridge.Match{}
	for _, h := range hits[:min(len(hits), cfg.MaxMatches)] {
		h.m.Similarity = float64(int(h.sim*1000+0.5)) / 1000
		matches = append(matches, h.m)
	}
	return matches
}

// TestIndexEqualsScan: a cache miss answered from the signature index
// gives exactly what a scan of every trajectory the caller may see gives,
// for a public and an ops key over trajectories a third of which only ops
// may see, with calls that share concepts with many trajectories, with
// none, and repeating a stored problem word for word. The low minimum
// similarity makes trajectories sharing no concept matches too, so the
// index's second part (the unrelated rest) is compared as well; so is a
// source with the floor concept-only matching sets (its MinSimilarity).
// The similarities the bridge reports are then the index's scores, which
// it no longer computes again: the scan's ConceptSimilarity checks them.
func TestIndexEqualsScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var stored []h4r.Item
	for i := range 400 {
		it := bridge.Trajectory{ID: fmt.Sprintf("t%04d", i), SessionID: fmt.Sprintf("s%d", i%40), Description: bridgetest.Problem(r, 2+r.IntN(5)),
			Domain: []string{"", "engineering", "ops"}[r.IntN(3)], ToolSequence: []string{"think"},
			SuccessScore: float64(r.IntN(11)) / 10, QualityScore: 0.5}.Item()
		if i%3 == 0 {
			it.Metadata.RestrictedToGroups = []string{"ops"}
		}
		stored = append(stored, it)
	}
	a := openApp(t, stored...)
	all, err := a.Store.Find(t.Context(), h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{bridge.KindTrajectory}}, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	var calls []map[string]any
	for n := range 20 {
		calls = append(calls, map[string]any{"content": bridgetest.Problem(r, 1+n%5), "domain": []string{"", "engineering"}[n%2]})
	}
	calls = append(calls,
		map[string]any{"content": "nothing like the others here"},
		map[string]any{"content": stored[7].Content["description"]},
		map[string]any{"content": stored[9].Content["description"], "domain": "ops"})
	idx := bridge.NewIndex(nil)
	if err := idx.Load(t.Context(), a.Store); err != nil {
		t.Fatal(err)
	}
	for _, minSim := range []float64{0.6, 0.3} {
		cfg := enabled()
		cfg.MinSimilarity, cfg.MaxMatches = minSim, 8
		for _, floor := range []float64{0, minSim} {
			for _, early := range []bool{false, true} { // stopping early needs a floor above 0: the 0.6 and 0.3 floors
				for _, spec := range []h4r.Specialist{public, ops} {
					src := sourceOf(early, bridge.IndexSource{Index: idx, Slicer: a.Slicer, Floor: floor,
						Budget: scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}})
					b, err := bridge.New(cfg, src, bridge.WithLogger(slog.New(slog.DiscardHandler)))
					if err != nil {
						t.Fatal(err)
					}
					for i, params := range calls {
						t.Run(fmt.Sprintf("min %v floor %v early %v %s call %d", minSim, floor, early, spec.ID, i), func(t *testing.T) {
							got := b.Enrich(t.Context(), spec, "think", params, nil).ContextBridge
							want := scan(t, all, a.Slicer, spec, cfg, params)
							if got == nil || !slices.Equal(got.Matches, want) {
								t.Fatalf("index: %+v\nscan:  %+v", got, want)
							}
						})
					}
				}
			}
		}
	}
}

// sourceOf is src as the bridge sees it: able to stop reading early (the
// IndexSource itself), or not (only its Candidates, as any Source).
func sourceOf(early bool, src bridge.IndexSource) bridge.Source {
	if early {
		return src
	}
	return struct{ bridge.Source }{src}
}

// TestIndexFollowsWrites: Sync indexes a trajectory written after Load
// and drops one deleted, so misses see the store as it is now; a write of
// another kind under a trajectory's id replaces it in the store and so
// leaves the index.
func TestIndexFollowsWrites(t *testing.T) {
	a := openApp(t, traj("t-old", "How to optimize database queries", "engineering", 0.9))
	idx := bridge.NewIndex(nil)
	if err := idx.Load(t.Context(), a.Store); err != nil || idx.Len() != 1 {
		t.Fatalf("Load: %v, %d indexed", err, idx.Len())
	}
	fresh := traj("t-new", "Kubernetes pod memory leak", "ops", 0.5)
	if _, err := a.Store.Upsert(t.Context(), []h4r.Item{fresh}); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		write func() error
		ids   []string
		want  int
	}{
		{"upsert indexes", func() error { return nil }, []string{"t-new"}, 2},
		{"delete drops", func() error { return a.Store.Delete(t.Context(), "t-old") }, []string{"t-old"}, 1},
		{"another kind drops", func() error {
			_, err := a.Store.Upsert(t.Context(), []h4r.Item{{ID: "t-new", Kind: "note", Text: "no longer a trajectory"}})
			return err
		}, []string{"t-new"}, 0},
		{"unknown id is no error", func() error { return nil }, []string{"never-stored"}, 0},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if err := s.write(); err != nil {
				t.Fatal(err)
			}
			if err := idx.Sync(t.Context(), a.Store, s.ids); err != nil || idx.Len() != s.want {
				t.Fatalf("Sync: %v, %d indexed, want %d", err, idx.Len(), s.want)
			}
		})
	}
}

// TestIndexKeepsHiddenOutAndVisibleIn: trajectories the public key may not
// see rank first (the same text as the call, or no concepts at all, with
// lower ids than the visible ones, more than one policy batch of them),
// some visible ones are redacted (PII), and many tie: a cache miss never
// returns a hidden trajectory, and the hidden ones do not push a visible
// one out, for either key and for calls with and without concepts. The
// answer is the scan's, among random tie-heavy trajectories too.
func TestIndexKeepsHiddenOutAndVisibleIn(t *testing.T) {
	const same, none = "How to optimize database queries", "the of and"
	var stored []h4r.Item
	add := func(id, desc string, hidden, pii bool) {
		it := bridge.Trajectory{ID: id, SessionID: "s-" + id, Description: desc, Domain: "engineering", ToolSequence: []string{"think"},
			SuccessScore: 0.5, QualityScore: 0.5}.Item()
		if hidden {
			it.Metadata.RestrictedToGroups = []string{"ops"}
		}
		if pii {
			it.Metadata.ContainsPII, it.Metadata.PIIFields = true, []string{"$.content.description"}
		}
		stored = append(stored, it)
	}
	for i := range 70 {
		add(fmt.Sprintf("a-hidden-%03d", i), same, true, false)
		add(fmt.Sprintf("c-hidden-%03d", i), none, true, false)
	}
	for i := range 20 {
		add(fmt.Sprintf("b-pii-%03d", i), same, false, true)
		add(fmt.Sprintf("d-visible-%03d", i), same, false, false)
		add(fmt.Sprintf("e-visible-%03d", i), "of the and", false, false)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 300 {
		ws := make([]string, 1+r.IntN(4))
		for j := range ws {
			ws[j] = []string{"database", "query", "optimize", "cache", "latency", "the"}[r.IntN(6)]
		}
		add(fmt.Sprintf("r-%03d", i), strings.Join(ws, " "), i%3 == 0, i%10 == 0)
	}
	a := openApp(t, stored...)
	all, err := a.Store.Find(t.Context(), h4r.ItemQuery{Filters: h4r.Filters{Kinds: []string{bridge.KindTrajectory}}, Limit: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	idx := bridge.NewIndex(nil)
	if err := idx.Load(t.Context(), a.Store); err != nil {
		t.Fatal(err)
	}
	calls := []map[string]any{
		{"content": same, "domain": "engineering"}, {"content": same}, {"content": "the and of"},
		{"content": "optimize database", "domain": "engineering"}, {"content": "database cache latency query"},
	}
	for _, maxMatches := range []int{3, 8} {
		cfg := enabled()
		cfg.MaxMatches = maxMatches
		for _, early := range []bool{false, true} {
			for _, spec := range []h4r.Specialist{public, ops} {
				src := sourceOf(early, bridge.IndexSource{Index: idx, Slicer: a.Slicer, Floor: cfg.MinSimilarity,
					Budget: scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}})
				b, err := bridge.New(cfg, src, bridge.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					t.Fatal(err)
				}
				for i, params := range calls {
					t.Run(fmt.Sprintf("max %d early %v %s call %d", maxMatches, early, spec.ID, i), func(t *testing.T) {
						got := b.Enrich(t.Context(), spec, "think", params, nil).ContextBridge
						want := scan(t, all, a.Slicer, spec, cfg, params)
						if got == nil || !slices.Equal(got.Matches, want) {
							t.Fatalf("index: %+v\nscan:  %+v", got, want)
						}
						if len(want) == 0 {
							t.Fatal("the scan finds no match: the case tests nothing")
						}
						for _, m := range got.Matches {
							if spec.ID == public.ID && (strings.Contains(m.TrajectoryID, "hidden") || hiddenRandom(m.TrajectoryID)) {
								t.Errorf("the public key got %s, which only ops may see", m.TrajectoryID)
							}
						}
					})
				}
			}
		}
	}
}

// countingSlicer counts the items it is asked to slice.
type countingSlicer struct {
	bridge.PolicySlicer
	items atomic.Int64
}

func (c *countingSlicer) Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome {
	c.items.Add(int64(len(items)))
	return c.PolicySlicer.Slice(ctx, spec, items, limits)
}

// TestEarlyStopEqualsTheWholeLimit: a miss that stops reading at
// MaxMatches candidates delivered unredacted answers as one that reads the
// whole limit, over 2,000 trajectories that share many concepts, a third
// of them ops-only, for both keys; and it slices fewer of them. With
// another extractor than the index's, or with an embedder, the bridge
// scores candidates anew, and reads the whole limit.
func TestEarlyStopEqualsTheWholeLimit(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var stored []h4r.Item
	for i := range 2000 {
		it := bridge.Trajectory{ID: fmt.Sprintf("t%04d", i), Description: bridgetest.Problem(r, 2+r.IntN(3)),
			Domain: bridgetest.Domain(r), ToolSequence: []string{"think"}, SuccessScore: r.Float64()}.Item()
		if i%3 == 0 {
			it.Metadata.RestrictedToGroups = []string{"ops"}
		}
		stored = append(stored, it)
	}
	a := openApp(t, stored...)
	idx := bridge.NewIndex(nil)
	if err := idx.Load(t.Context(), a.Store); err != nil {
		t.Fatal(err)
	}
	cfg := enabled()
	cfg.CacheSize = 1 // every call below is new anyway; keep the cache out of it
	budget := scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}
	whole, early := &countingSlicer{PolicySlicer: a.Slicer}, &countingSlicer{PolicySlicer: a.Slicer}
	other, hybrid := &countingSlicer{PolicySlicer: a.Slicer}, &countingSlicer{PolicySlicer: a.Slicer}
	bridgeOf := func(s bridge.PolicySlicer, early bool, opts ...bridge.Option) *bridge.Bridge {
		src := sourceOf(early, bridge.IndexSource{Index: idx, Slicer: s, Floor: cfg.MinSimilarity, Budget: budget})
		b, err := bridge.New(cfg, src, append(opts, bridge.WithLogger(slog.New(slog.DiscardHandler)))...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	wholeBridge, earlyBridge := bridgeOf(whole, false), bridgeOf(early, true)
	otherBridge := bridgeOf(other, true, bridge.WithExtractor(recomputing{extract: bridge.TechExtractor{}.Extract}))
	hash, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	hybridBridge := bridgeOf(hybrid, true, bridge.WithEmbedder(hash))
	matched := 0
	for n := range 60 {
		params := map[string]any{"content": bridgetest.Problem(r, 1+n%4), "domain": bridgetest.Domain(r)}
		for _, spec := range []h4r.Specialist{public, ops} {
			want := wholeBridge.Enrich(t.Context(), spec, "think", params, nil).ContextBridge
			got := earlyBridge.Enrich(t.Context(), spec, "think", params, nil).ContextBridge
			if want == nil || got == nil || !slices.Equal(got.Matches, want.Matches) {
				t.Fatalf("call %d, %s: stopping at enough gave %+v\nthe whole limit %+v", n, spec.ID, got, want)
			}
			if len(want.Matches) == cfg.MaxMatches {
				matched++
			}
			otherBridge.Enrich(t.Context(), spec, "think", params, nil)
			hybridBridge.Enrich(t.Context(), spec, "think", params, nil)
		}
	}
	if o, w := other.items.Load(), whole.items.Load(); o != w {
		t.Errorf("with another extractor the bridge sliced %d trajectories, want the whole limit's %d", o, w)
	}
	if h, w := hybrid.items.Load(), whole.items.Load(); h != w {
		t.Errorf("with an embedder the bridge sliced %d trajectories, want the whole limit's %d", h, w)
	}
	if matched < 20 {
		t.Fatalf("only %d of 120 calls found %d matches: the case does not test stopping early", matched, cfg.MaxMatches)
	}
	if w, e := whole.items.Load(), early.items.Load(); e*2 > w {
		t.Errorf("stopping at enough sliced %d trajectories, the whole limit %d: want fewer than half", e, w)
	}
}

// hiddenRandom reports whether a random trajectory of
// TestIndexKeepsHiddenOutAndVisibleIn is ops-only (every third).
func hiddenRandom(id string) bool {
	var n int
	_, err := fmt.Sscanf(id, "r-%d", &n)
	return err == nil && n%3 == 0
}

// recomputing extracts as TechExtractor does, but is not comparable, so a
// bridge using it never takes the index's signatures and makes every
// candidate's anew.
type recomputing struct{ extract func(string) []string }

func (r recomputing) Extract(text string) []string { return r.extract(text) }

// TestIndexSignaturesAreNotChanged: in hybrid mode a miss embeds its
// candidates; those given with the index's signature are embedded on a
// copy (concurrent misses sharing candidates race on the index under
// -race otherwise), and the matches are the ones a bridge making every
// signature anew finds.
func TestIndexSignaturesAreNotChanged(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var stored []h4r.Item
	for i := range 200 {
		stored = append(stored, bridge.Trajectory{ID: fmt.Sprintf("t%03d", i), SessionID: "s", Description: bridgetest.Problem(r, 2+r.IntN(3)),
			Domain: "engineering", ToolSequence: []string{"think"}, SuccessScore: 0.5, QualityScore: 0.5}.Item())
	}
	a := openApp(t, stored...)
	idx := bridge.NewIndex(nil)
	if err := idx.Load(t.Context(), a.Store); err != nil {
		t.Fatal(err)
	}
	hash, err := embed.NewHash()
	if err != nil {
		t.Fatal(err)
	}
	src := bridge.IndexSource{Index: idx, Slicer: a.Slicer, Budget: scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}}
	cfg := enabled()
	cfg.MinSimilarity = 0.3
	reusing, err := bridge.New(cfg, src, bridge.WithEmbedder(hash), bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	anew, err := bridge.New(cfg, src, bridge.WithEmbedder(hash), bridge.WithExtractor(recomputing{bridge.TechExtractor{}.Extract}),
		bridge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	calls := make([]map[string]any, 16)
	for i := range calls {
		calls[i] = map[string]any{"content": bridgetest.Problem(r, 3), "domain": "engineering"}
	}
	got := make([]*bridge.Block, len(calls))
	var wg sync.WaitGroup
	for i, params := range calls {
		wg.Go(func() { got[i] = reusing.Enrich(t.Context(), public, "think", params, nil).ContextBridge })
	}
	wg.Wait()
	matched := 0
	for i, params := range calls {
		want := anew.Enrich(t.Context(), public, "think", params, nil).ContextBridge
		if got[i] == nil || want == nil || got[i].SimilarityMode != "hybrid" || !slices.Equal(got[i].Matches, want.Matches) {
			t.Fatalf("call %d: reusing the index's signatures %+v, making them anew %+v", i, got[i], want)
		}
		matched += len(want.Matches)
	}
	if matched == 0 {
		t.Fatal("no call matched: the test compares nothing")
	}
}

// failingSlicer fails the decisions of every item in the chunks fail
// picks (by call number, from 0) with err, as the slicer does when the
// policy cannot decide them: left out with reason policy, counted in
// Failed, the first error in Err.
type failingSlicer struct {
	bridge.PolicySlicer
	fail  func(call int) bool
	err   error
	calls atomic.Int64
}

func (f *failingSlicer) Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome {
	o := f.PolicySlicer.Slice(ctx, spec, items, limits)
	if f.fail(int(f.calls.Add(1) - 1)) {
		for i := range o.Verdicts {
			o.Verdicts[i] = scs.Verdict{Reason: h4r.ReasonPolicy, Detail: "policy error", Err: f.err}
		}
		o.Failed, o.Err = len(items), f.err
	}
	return o
}

// unreachablePolicy is the error of a policy service that did not answer.
type unreachablePolicy struct{}

func (unreachablePolicy) Error() string           { return "OPA did not answer" }
func (unreachablePolicy) PolicyUnreachable() bool { return true }

// TestReadingThroughPolicyFailures: a miss whose first chunk of
// candidates the policy could not decide reads on (they are left out, as
// the slicer fails closed); one where no decision could be made fails as
// a storage failure (EHR-1), at once when the policy service did not
// answer, else after limit candidates.
func TestReadingThroughPolicyFailures(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	var stored []h4r.Item
	for i := range 500 {
		stored = append(stored, bridge.Trajectory{ID: fmt.Sprintf("t%04d", i), Description: bridgetest.Problem(r, 2),
			Domain: "ops", ToolSequence: []string{"think"}, SuccessScore: 0.5}.Item())
	}
	a := openApp(t, stored...)
	idx := bridge.NewIndex(nil)
	if err := idx.Load(t.Context(), a.Store); err != nil {
		t.Fatal(err)
	}
	// The call is a stored problem word for word: its related
	// trajectories fill many chunks.
	params := map[string]any{"content": stored[0].Content["description"], "domain": "ops"}
	tests := []struct {
		name      string
		fail      func(call int) bool
		err       error
		wantError bool
		maxCalls  int64 // chunks sliced at most
	}{
		{"the first chunk undecided: read on", func(call int) bool { return call == 0 }, errors.New("eval failed"), false, 1 << 30},
		{"nothing decided: fail after limit candidates", func(int) bool { return true }, errors.New("eval failed"), true, 7}, // 50 in chunks of 8
		{"the policy service did not answer: fail at once", func(int) bool { return true }, unreachablePolicy{}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slicer := &failingSlicer{PolicySlicer: a.Slicer, fail: tt.fail, err: tt.err}
			cfg := enabled()
			b, err := bridge.New(cfg, bridge.IndexSource{Index: idx, Slicer: slicer, Floor: cfg.MinSimilarity,
				Budget: scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}},
				bridge.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			got := b.Enrich(t.Context(), public, "think", params, nil).ContextBridge
			errs := b.Metrics().Snapshot()["error_count"]
			switch {
			case tt.wantError && (got != nil || errs != 1):
				t.Errorf("context_bridge %+v, error_count %d: want it left out and one error", got, errs)
			case !tt.wantError && (got == nil || len(got.Matches) == 0 || errs != 0):
				t.Errorf("context_bridge %+v, error_count %d: want matches from the later chunks", got, errs)
			}
			if calls := slicer.calls.Load(); calls > tt.maxCalls {
				t.Errorf("%d chunks sliced, want at most %d", calls, tt.maxCalls)
			}
		})
	}
}

func TestResign(t *testing.T) {
	current := bridge.Trajectory{ID: "t", Description: "SQL query performance tuning"}.Item()
	cases := []struct {
		name        string
		item        h4r.Item
		wantChanged bool
		wantText    string
	}{
		{"without concepts", h4r.Item{ID: "t", Kind: bridge.KindTrajectory, Text: "SQL query performance tuning",
			Content: map[string]any{"description": "SQL query performance tuning"}}, true, current.Text},
		{"stale concepts, no description in content", h4r.Item{ID: "t", Kind: bridge.KindTrajectory, Text: "SQL query performance tuning\nconcepts: sql"},
			true, current.Text},
		{"current", current, false, current.Text},
		{"another kind", h4r.Item{ID: "n", Kind: "note", Text: "SQL tuning"}, false, "SQL tuning"},
		{"no description", h4r.Item{ID: "t", Kind: bridge.KindTrajectory, Text: " "}, false, " "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := bridge.Resign(tc.item)
			if changed != tc.wantChanged || got.Text != tc.wantText {
				t.Errorf("Resign = %q, %v; want %q, %v", got.Text, changed, tc.wantText, tc.wantChanged)
			}
		})
	}
}
