package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/h4r/h4r"
)

// knownOptimum builds queries whose ground truth fixes the weights: the
// relevant item has trust 1 and relevance 0.5; a confuser has relevance 1
// and trust 0; a second confuser is old (recency decides against it only
// when λ > 0). The relevant item ranks first iff w_trust > 0.5·w_relevance
// … and relevance must stay positive, because a third item with trust 1
// and relevance 0 must stay below it.
func knownOptimum(n int) []*TuneQuery {
	qs := make([]*TuneQuery, n)
	for i := range qs {
		sig := func(rel, trust float64) h4r.Signals {
			var s h4r.Signals
			s[h4r.Relevance], s[h4r.Trust] = rel, trust
			return s
		}
		qs[i] = &TuneQuery{Dataset: "known", ID: fmt.Sprintf("q%d", i), Judged: Judgments{"right": 1},
			Cands: []TuneCandidate{
				{ID: "confuser", Signals: sig(1, 0)},
				{ID: "right", Signals: sig(0.5, 1)},
				{ID: "trusted-but-off-topic", Signals: sig(0, 1)},
				{ID: "old", Signals: sig(0.6, 1), AgeDays: 100},
			}}
	}
	return qs
}

func TestTunerFindsKnownOptimum(t *testing.T) {
	qs := knownOptimum(6)
	if got := objective(qs, Params{Weights: RelevanceOnly()}); got > 0.7 {
		t.Fatalf("relevance-only already scores %v; the set does not test anything", got)
	}
	tu := NewTuner(WithSeed(3), WithRestarts(2))
	tu.Workers = 1
	p, score, path, err := tu.Fit(context.Background(), qs)
	if err != nil {
		t.Fatal(err)
	}
	if score != 1 {
		t.Fatalf("tuned objective = %v with %+v, want 1", score, p)
	}
	w := p.Weights
	// right beats confuser: 0.5r + t > r ⇔ t > 0.5r; beats off-topic: r > 0.
	// beats old: 0.5r + t + rec > 0.6r + t + rec·e^{−100λ} ⇔ rec(1−e^{−100λ}) > 0.1r.
	if !(w[h4r.Trust] > 0.5*w[h4r.Relevance] && w[h4r.Relevance] > 0 && p.Lambda > 0 && w[h4r.Recency] > 0) {
		t.Errorf("tuned %+v: want trust > relevance/2 > 0, recency > 0, λ > 0", p)
	}
	if math.Abs(w.Sum()-1) > 1e-9 {
		t.Errorf("weights sum to %v, want 1", w.Sum())
	}
	if len(path) == 0 || path[len(path)-1].Train < path[0].Train {
		t.Errorf("path %+v does not climb", path)
	}
}

func TestFoldsNeverLeak(t *testing.T) {
	var qs []*TuneQuery
	for d, n := range map[string]int{"a": 23, "b": 7, "c": 10} {
		for i := range n {
			qs = append(qs, &TuneQuery{Dataset: d, ID: fmt.Sprintf("%s%d", d, i)})
		}
	}
	tests := []struct {
		name string
		k    int
		seed uint64
	}{{"k2", 2, 1}, {"k5", 5, 1}, {"k5 other seed", 5, 99}, {"k7", 7, 4}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			folds, err := Folds(qs, tt.k, tt.seed)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]int{}
			for f := range folds {
				train, test := Split(qs, folds, f)
				if len(train)+len(test) != len(qs) {
					t.Errorf("fold %d: %d train + %d test != %d", f, len(train), len(test), len(qs))
				}
				for _, q := range test {
					if slices.Contains(train, q) {
						t.Errorf("fold %d: query %s is in its own training set", f, q.ID)
					}
				}
				for _, i := range folds[f] {
					seen[i]++
				}
				for _, d := range []string{"a", "b", "c"} {
					if !slices.ContainsFunc(test, func(q *TuneQuery) bool { return q.Dataset == d }) {
						t.Errorf("fold %d holds no query of %s", f, d)
					}
				}
			}
			for i := range qs {
				if seen[i] != 1 {
					t.Errorf("query %s is in %d test folds, want 1", qs[i].ID, seen[i])
				}
			}
			again, _ := Folds(qs, tt.k, tt.seed)
			if !slices.EqualFunc(folds, again, slices.Equal) {
				t.Error("the same seed gave different folds")
			}
		})
	}
	if _, err := Folds(qs, 8, 1); err == nil {
		t.Error("8 folds of a dataset with 7 queries: want an error")
	}
	if _, err := Folds(qs, 1, 1); err == nil {
		t.Error("1 fold: want an error")
	}
}

func TestRankTieBreaks(t *testing.T) {
	var s h4r.Signals
	s[h4r.Relevance] = 1
	q := &TuneQuery{Cands: []TuneCandidate{
		{ID: "b", Signals: s, AgeDays: 1},
		{ID: "a", Signals: s, AgeDays: 1},
		{ID: "c", Signals: s, AgeDays: 0},
	}}
	// Equal scores: newer first, then by id — the ranker's order.
	got := Params{Weights: RelevanceOnly(), Lambda: 0.1}.Rank(q, 0)
	if want := []string{"c", "a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Rank = %v, want %v", got, want)
	}
	if top := (Params{Weights: RelevanceOnly(), Lambda: 0.1}).Rank(q, 2); !slices.Equal(top, []string{"c", "a"}) {
		t.Errorf("top 2 = %v", top)
	}
}

func TestCrossValidateReportsHeldOutGain(t *testing.T) {
	qs := knownOptimum(10)
	for i, q := range qs {
		q.Category = []string{"even", "odd"}[i%2]
	}
	tu := NewTuner(WithSeed(1), WithRestarts(1))
	tu.Workers = 1
	rep, err := CrossValidate(context.Background(), qs, 5, tu, []Baseline{{Name: "relevance-only", Params: Params{Weights: RelevanceOnly()}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.HeldOut[0]
	if c.Tuned.NDCG10 != 1 || c.GainNDCG10["relevance-only"] <= 0 || c.FoldsBeatRelevance != 5 {
		t.Errorf("held out %+v: want nDCG 1, a positive gain, 5/5 folds", c)
	}
	if len(c.Categories) != 2 || c.Categories[0].Category != "even" || c.Categories[0].Queries != 5 ||
		c.Categories[1].Tuned != 1 || c.Categories[1].RelevanceOnly >= 1 {
		t.Errorf("categories %+v: want even and odd, 5 queries each, tuned 1 above relevance-only", c.Categories)
	}
	if len(rep.PerFold) != 5 || len(rep.Sweep) == 0 {
		t.Errorf("%d folds, %d sweep points", len(rep.PerFold), len(rep.Sweep))
	}
}

// The top-k selection must agree with the full sort, ties included.
func TestRankTopKAgreesWithSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 50 {
		q := &TuneQuery{}
		for i := range 1 + rng.IntN(40) {
			var s h4r.Signals
			for j := range s {
				s[j] = float64(rng.IntN(3)) / 2 // coarse values: many ties
			}
			q.Cands = append(q.Cands, TuneCandidate{ID: fmt.Sprintf("c%02d", rng.IntN(99)*100+i), Signals: s, AgeDays: float64(rng.IntN(3))})
		}
		p := Params{Weights: SeedWeights(), Lambda: 0.1}
		p.Weights[h4r.Relevance] = float64(trial%3) / 2
		all := p.Rank(q, 0)
		for _, k := range []int{1, 3, 10} {
			want := all[:min(k, len(all))]
			if got := p.Rank(q, k); !slices.Equal(got, want) {
				t.Fatalf("trial %d, k %d: top-k %v, sort %v", trial, k, got, want)
			}
		}
	}
}

// The search must not depend on map order: the same queries and seed give
// the same weights every time.
func TestFitIsDeterministic(t *testing.T) {
	var qs []*TuneQuery
	for _, d := range []string{"a", "b", "c", "d"} {
		for _, q := range knownOptimum(3) {
			q.Dataset = d
			qs = append(qs, q)
		}
	}
	var first Params
	for i := range 5 {
		tu := NewTuner(WithSeed(2), WithRestarts(2))
		p, _, _, err := tu.Fit(context.Background(), qs)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = p
		} else if p != first {
			t.Fatalf("run %d gave %+v, run 0 %+v", i, p, first)
		}
	}
}

// floorSet is a public-like dataset (constant metadata: trust 0.5 for all)
// where causality points the wrong way on one query of four, and a
// synthetic-like one where causality decides and trust varies. Ties go to
// the wrong item (ids break them), so weights that ignore relevance lose.
func floorSet() []*TuneQuery {
	var qs []*TuneQuery
	for i := range 4 {
		var right, wrong h4r.Signals
		right[h4r.Relevance], right[h4r.Trust] = 0.9, 0.5
		wrong[h4r.Relevance], wrong[h4r.Trust] = 0.8, 0.5
		if i == 0 {
			wrong[h4r.Causality] = 1
		}
		qs = append(qs, &TuneQuery{Dataset: "public", ID: fmt.Sprintf("p%d", i), Judged: Judgments{"z-right": 1},
			Cands: []TuneCandidate{{ID: "z-right", Signals: right}, {ID: "a-wrong", Signals: wrong}}})
	}
	for i := range 12 {
		var right, wrong h4r.Signals
		right[h4r.Relevance], right[h4r.Causality], right[h4r.Trust] = 0.5, 1, float64(i%3)/3
		wrong[h4r.Relevance], wrong[h4r.Trust] = 0.9, float64(i%3)/3
		qs = append(qs, &TuneQuery{Dataset: "synthetic", ID: fmt.Sprintf("s%d", i), Judged: Judgments{"z-right": 1},
			Cands: []TuneCandidate{{ID: "z-right", Signals: right}, {ID: "a-wrong", Signals: wrong}}})
	}
	return qs
}

func TestFloors(t *testing.T) {
	floors := Floors(floorSet())
	if len(floors) != 1 {
		t.Fatalf("floors %v, want one for the public set only (the synthetic one's trust varies)", floors)
	}
	if f := floors["public"]; math.Abs(f-(1-FloorSlack)) > 1e-12 {
		t.Errorf("public floor %v, want relevance-only's 1 − %v", f, FloorSlack)
	}
}

// Causality wins the synthetic set (0.63 → 1) and loses the public one
// (1 → 0.91): the macro average prefers it, the floor forbids it, and the
// tuned weights keep the public set at relevance-only's figure.
func TestTunerKeepsTheFloor(t *testing.T) {
	qs := floorSet()
	floors := Floors(qs)
	breaking := Params{Weights: h4r.Weights{h4r.Relevance: 0.3, h4r.Causality: 0.7}}
	if objective(qs, breaking) <= objective(qs, Params{Weights: RelevanceOnly()}) {
		t.Fatalf("the set does not test the floor: relevance-only already has the best objective")
	}
	if got, plain := target(qs, breaking, floors), objective(qs, breaking); got >= plain {
		t.Fatalf("target %v of weights breaking the floor is not under their objective %v", got, plain)
	}
	tu := NewTuner(WithSeed(1), WithRestarts(2), WithLambdaGrid(nil))
	tu.Workers = 1
	p, _, _, err := tu.Fit(context.Background(), qs)
	if err != nil {
		t.Fatal(err)
	}
	names, means := datasetNDCG(qs, p)
	for i, name := range names {
		if f, ok := floors[name]; ok && means[i] < f {
			t.Errorf("tuned %+v: %s nDCG@10 %.3f under its floor %.3f", p, name, means[i], f)
		}
	}
}

// categoryFloorSet is a synthetic-like dataset: in four queries of
// category relevance the text decides and, in one, an important item that
// matches worse lies in wait; in twelve of category importance the more
// important item is right though it matches worse. Weighting importance above 0.9×relevance
// wins the twelve and loses the one: the macro average prefers it.
func categoryFloorSet() []*TuneQuery {
	var qs []*TuneQuery
	for i := range 4 {
		var right, wrong h4r.Signals
		right[h4r.Relevance], right[h4r.Importance] = 0.9, 0.5
		wrong[h4r.Relevance], wrong[h4r.Importance] = 0.5, 0.5
		if i == 0 {
			wrong[h4r.Importance] = 1
		}
		qs = append(qs, &TuneQuery{Dataset: "synthetic", ID: fmt.Sprintf("r%d", i), Category: CatRelevance, Judged: Judgments{"z-right": 1},
			Cands: []TuneCandidate{{ID: "z-right", Signals: right}, {ID: "a-wrong", Signals: wrong}}})
	}
	for i := range 12 {
		var right, wrong h4r.Signals
		right[h4r.Relevance], right[h4r.Importance] = 0.5, 1
		wrong[h4r.Relevance], wrong[h4r.Importance] = 0.95, 0.5
		qs = append(qs, &TuneQuery{Dataset: "synthetic", ID: fmt.Sprintf("m%d", i), Category: CatImportance, Judged: Judgments{"z-right": 1},
			Cands: []TuneCandidate{{ID: "z-right", Signals: right}, {ID: "a-wrong", Signals: wrong}}})
	}
	return qs
}

// TestTunerKeepsTheRelevanceCategoryFloor: the queries whose answer the
// text decides keep relevance-only's figure, although the dataset's
// metadata varies and the macro average would trade one of them for the
// importance queries.
func TestTunerKeepsTheRelevanceCategoryFloor(t *testing.T) {
	qs := categoryFloorSet()
	floors := Floors(qs)
	group := FloorGroup("synthetic", CatRelevance)
	if f, ok := floors[group]; !ok || math.Abs(f-(1-FloorSlack)) > 1e-12 || len(floors) != 1 {
		t.Fatalf("floors %v, want only %s at relevance-only's 1 − %v", floors, group, FloorSlack)
	}
	breaking := Params{Weights: h4r.Weights{h4r.Relevance: 0.5, h4r.Importance: 0.5}, Lambda: 0.1}
	if objective(qs, breaking) <= objective(qs, Params{Weights: RelevanceOnly()}) {
		t.Fatalf("the set does not test the floor: relevance-only already has the best objective")
	}
	if got, plain := target(qs, breaking, floors), objective(qs, breaking); got >= plain {
		t.Fatalf("target %v of weights breaking the floor is not under their objective %v", got, plain)
	}
	tu := NewTuner(WithSeed(1), WithRestarts(2), WithLambdaGrid(nil))
	tu.Workers = 1
	p, _, _, err := tu.Fit(context.Background(), qs)
	if err != nil {
		t.Fatal(err)
	}
	if m := categoryNDCG(qs, p, CatRelevance)[group]; m < floors[group] {
		t.Errorf("tuned %+v: relevance queries nDCG@10 %.3f under their floor %.3f", p, m, floors[group])
	}
}
