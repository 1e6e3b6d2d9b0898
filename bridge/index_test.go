package bridge_test

import (
	"cmp"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/bridge"
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
func TestIndexEqualsScan(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var stored []h4r.Item
	for i := range 400 {
		it := bridge.Trajectory{ID: fmt.Sprintf("t%04d", i), SessionID: fmt.Sprintf("s%d", i%40), Description: problem(r, 2+r.IntN(5)),
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
		calls = append(calls, map[string]any{"content": problem(r, 1+n%5), "domain": []string{"", "engineering"}[n%2]})
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
			for _, spec := range []h4r.Specialist{public, ops} {
				src := bridge.IndexSource{Index: idx, Slicer: a.Slicer, Floor: floor,
					Budget: scs.Limits{MaxBytes: a.Config.MaxBytesDefault, MaxTokens: a.Config.MaxTokensDefault}}
				b, err := bridge.New(cfg, src, bridge.WithLogger(slog.New(slog.DiscardHandler)))
				if err != nil {
					t.Fatal(err)
				}
				for i, params := range calls {
					t.Run(fmt.Sprintf("min %v floor %v %s call %d", minSim, floor, spec.ID, i), func(t *testing.T) {
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
