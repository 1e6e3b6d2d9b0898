package rank

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// now is the fixed clock of these tests.
var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

const tolerance = 1e-12

// only returns weights that score by one signal.
func only(s h4r.Signal) h4r.Weights {
	var w h4r.Weights
	w[s] = 1
	return w
}

func ptr(x float64) *float64 { return &x }

// cand builds a candidate created at testNow, found by the given evidence.
func cand(id string, ev ...h4r.Evidence) *h4r.Candidate {
	return &h4r.Candidate{
		Item:     &h4r.Item{ID: id, Text: "text of " + id, Metadata: h4r.Metadata{CreatedAt: testNow}},
		Evidence: ev,
	}
}

func ft(score float64, rank int) h4r.Evidence {
	return h4r.Evidence{Generator: h4r.GenFullText, Score: score, Rank: rank}
}

func vec(score float64, rank int) h4r.Evidence {
	return h4r.Evidence{Generator: h4r.GenVector, Score: score, Rank: rank}
}

func hops(d int) h4r.Evidence { return h4r.Evidence{Generator: h4r.GenGraph, Distance: d} }

// signalByID ranks cands and returns signal s of each item by id.
func signalByID(t *testing.T, cands []*h4r.Candidate, opts Options, s h4r.Signal) map[string]float64 {
	t.Helper()
	if opts.Weights == (h4r.Weights{}) {
		opts.Weights = only(s)
	}
	if opts.Now.IsZero() {
		opts.Now = testNow
	}
	ranked, _ := Rank(cands, opts)
	if len(ranked) != len(cands) {
		t.Fatalf("Rank returned %d results for %d candidates", len(ranked), len(cands))
	}
	got := map[string]float64{}
	for _, r := range ranked {
		got[r.Candidate.Item.ID] = r.Signals[s]
	}
	return got
}

func assertValues(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: missing from the ranking", id)
			continue
		}
		if math.Abs(g-w) > tolerance {
			t.Errorf("%s = %.15g, want %.15g", id, g, w)
		}
	}
}

func TestRelevanceRelative(t *testing.T) {
	tests := []struct {
		name   string
		cands  []*h4r.Candidate
		fusion Fusion
		want   map[string]float64
	}{
		{
			name:  "single hit gets 1",
			cands: []*h4r.Candidate{cand("a", ft(3.2, 1))},
			want:  map[string]float64{"a": 1},
		},
		{
			name:  "min-max within the candidate set",
			cands: []*h4r.Candidate{cand("a", ft(11, 1)), cand("b", ft(5, 2)), cand("c", ft(2, 3))},
			want:  map[string]float64{"a": 1, "b": 1.0 / 3, "c": 0},
		},
		{
			name:  "negative raw scores normalise the same way",
			cands: []*h4r.Candidate{cand("a", ft(-1, 1)), cand("b", ft(-3, 2)), cand("c", ft(-5, 3))},
			want:  map[string]float64{"a": 1, "b": 0.5, "c": 0},
		},
		{
			name:  "all equal scores get 1",
			cands: []*h4r.Candidate{cand("a", ft(4, 1)), cand("b", ft(4, 2))},
			want:  map[string]float64{"a": 1, "b": 1},
		},
		{
			name: "two generators with equal weights take the mean, a miss counts 0",
			cands: []*h4r.Candidate{
				cand("a", ft(10, 1), vec(0.2, 3)),
				cand("b", ft(4, 2), vec(0.8, 1)),
				cand("c", vec(0.5, 2)),
			},
			// fulltext: a 1, b 0; vector: a 0, b 1, c 0.5.
			want: map[string]float64{"a": 0.5, "b": 0.5, "c": 0.25},
		},
		{
			name: "generator weights",
			cands: []*h4r.Candidate{
				cand("a", ft(10, 1), vec(0.2, 3)),
				cand("b", ft(4, 2), vec(0.8, 1)),
				cand("c", vec(0.5, 2)),
			},
			fusion: Fusion{Weights: map[string]float64{h4r.GenFullText: 3}},
			want:   map[string]float64{"a": 0.75, "b": 0.25, "c": 0.125},
		},
		{
			name:  "a generator without hits in this request does not dilute",
			cands: []*h4r.Candidate{cand("a", ft(9, 1)), cand("b", ft(1, 2))},
			// vector is weighted but found nothing, so fulltext alone decides.
			fusion: Fusion{Weights: map[string]float64{h4r.GenVector: 5}},
			want:   map[string]float64{"a": 1, "b": 0},
		},
		{
			name:   "a zero-weight generator is ignored",
			cands:  []*h4r.Candidate{cand("a", ft(9, 1), vec(0.1, 2)), cand("b", ft(1, 2), vec(0.9, 1))},
			fusion: Fusion{Weights: map[string]float64{h4r.GenVector: 0}},
			want:   map[string]float64{"a": 1, "b": 0},
		},
		{
			name:   "all text generators weighted zero gives 0, not NaN",
			cands:  []*h4r.Candidate{cand("a", ft(9, 1)), cand("b", ft(1, 2))},
			fusion: Fusion{Weights: map[string]float64{h4r.GenFullText: 0}},
			want:   map[string]float64{"a": 0, "b": 0},
		},
		{
			name:  "found only by hops has relevance 0",
			cands: []*h4r.Candidate{cand("a", ft(9, 1), hops(0)), cand("b", hops(1))},
			want:  map[string]float64{"a": 1, "b": 0},
		},
		{
			name:  "only hops in the request",
			cands: []*h4r.Candidate{cand("a", hops(0)), cand("b", hops(2))},
			want:  map[string]float64{"a": 0, "b": 0},
		},
		{
			name:  "a non-finite raw score counts as the worst",
			cands: []*h4r.Candidate{cand("a", ft(8, 1)), cand("b", ft(math.NaN(), 2)), cand("c", ft(4, 3))},
			want:  map[string]float64{"a": 1, "b": 0, "c": 0},
		},
		{
			name: "an unscaled generator's scores are taken as they are, clamped to [0, 1]",
			cands: []*h4r.Candidate{
				cand("a", ft(10, 1), h4r.Evidence{Generator: "session", Score: 0.6, Rank: 1}),
				cand("b", ft(4, 2), h4r.Evidence{Generator: "session", Score: 0.5, Rank: 2}),
				cand("c", h4r.Evidence{Generator: "session", Score: 1.5, Rank: 3}),
			},
			// Min-max would give the session scores 0.1/1 → 0.1, 0 and 1.
			fusion: Fusion{Unscaled: map[string]bool{"session": true}},
			want:   map[string]float64{"a": 0.8, "b": 0.25, "c": 0.5},
		},
		{
			name:  "another text generator (a Postgres one, say) counts as text",
			cands: []*h4r.Candidate{cand("a", h4r.Evidence{Generator: "pgfts", Score: 2, Rank: 1}), cand("b", ft(5, 1))},
			want:  map[string]float64{"a": 0.5, "b": 0.5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := signalByID(t, tt.cands, Options{Fusion: tt.fusion}, h4r.Relevance)
			assertValues(t, got, tt.want)
			// Fusion.Relevance, what orders the first pass before ranking,
			// gives what ranking gives.
			for i, r := range tt.fusion.Relevance(tt.cands) {
				if id := tt.cands[i].Item.ID; math.Abs(r-tt.want[id]) > tolerance {
					t.Errorf("Fusion.Relevance of %s = %v, want %v", id, r, tt.want[id])
				}
			}
		})
	}
}

func TestRelevanceRRF(t *testing.T) {
	rrf := Fusion{Method: FusionRRF}
	tests := []struct {
		name   string
		cands  []*h4r.Candidate
		fusion Fusion
		want   map[string]float64
	}{
		{
			name:   "single generator, default k 60",
			cands:  []*h4r.Candidate{cand("a", ft(9, 1)), cand("b", ft(8, 2)), cand("c", ft(1, 3))},
			fusion: rrf,
			want:   map[string]float64{"a": 1, "b": 61.0 / 62, "c": 61.0 / 63},
		},
		{
			name:   "equal raw scores still keep their ranks",
			cands:  []*h4r.Candidate{cand("a", ft(5, 1)), cand("b", ft(5, 2))},
			fusion: rrf,
			want:   map[string]float64{"a": 1, "b": 61.0 / 62},
		},
		{
			name: "two generators, first everywhere is 1",
			cands: []*h4r.Candidate{
				cand("a", ft(9, 1), vec(0.9, 1)),
				cand("b", ft(3, 2), vec(0.4, 2)),
				cand("c", vec(0.3, 3)),
			},
			fusion: rrf,
			// best possible = 2/61.
			want: map[string]float64{"a": 1, "b": 61.0 / 62, "c": (1.0 / 63) / (2.0 / 61)},
		},
		{
			name:   "custom k and generator weights",
			cands:  []*h4r.Candidate{cand("a", ft(9, 1), vec(0.1, 2)), cand("b", vec(0.9, 1))},
			fusion: Fusion{Method: FusionRRF, RRFK: 1, Weights: map[string]float64{h4r.GenVector: 3}},
			// best = 1/2 + 3/2 = 2; a = 1/2 + 3/3 = 1.5; b = 3/2.
			want: map[string]float64{"a": 0.75, "b": 0.75},
		},
		{
			name:   "an unset rank counts as first",
			cands:  []*h4r.Candidate{cand("a", ft(1, 0))},
			fusion: rrf,
			want:   map[string]float64{"a": 1},
		},
		{
			name:   "found only by hops has relevance 0",
			cands:  []*h4r.Candidate{cand("a", ft(1, 1)), cand("b", hops(1))},
			fusion: rrf,
			want:   map[string]float64{"a": 1, "b": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := signalByID(t, tt.cands, Options{Fusion: tt.fusion}, h4r.Relevance)
			assertValues(t, got, tt.want)
		})
	}
}

// TestSingleGeneratorOrderPreserved checks that ranking by relevance alone
// reproduces one generator's order exactly, whatever the other metadata:
// the benchmark harness compares it against BM25's own order.
func TestSingleGeneratorOrderPreserved(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 300
	// BM25-like scores: distinct, some very close together.
	scores := make([]float64, n)
	for i := range scores {
		scores[i] = 25 * rng.Float64()
	}
	scores[7] = scores[3] + 1e-9
	slices.SortFunc(scores, func(a, b float64) int { return -compareFloat(a, b) })
	for _, gen := range []string{h4r.GenFullText, h4r.GenVector} {
		for _, method := range []string{FusionRelative, FusionRRF} {
			t.Run(gen+"/"+method, func(t *testing.T) {
				var cands []*h4r.Candidate
				for i, s := range scores {
					c := cand(fmt.Sprintf("doc-%03d", n-i)) // ids run against the order
					c.Evidence = []h4r.Evidence{{Generator: gen, Score: s, Rank: i + 1}}
					c.Item.Metadata.CreatedAt = testNow.Add(-time.Duration(rng.IntN(1000)) * time.Hour)
					c.Item.Metadata.Importance = ptr(rng.Float64())
					c.Item.Metadata.AccessCount = rng.Int64N(50)
					cands = append(cands, c)
				}
				// Shuffle the input: the order must come from the scores.
				want := idsOf(cands)
				rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
				ranked, _ := Rank(cands, Options{Weights: only(h4r.Relevance), Now: testNow, Fusion: Fusion{Method: method}})
				got := make([]string, len(ranked))
				for i, r := range ranked {
					got[i] = r.Candidate.Item.ID
				}
				if !slices.Equal(got, want) {
					t.Errorf("order differs from the generator's\n got %v\nwant %v", got[:10], want[:10])
				}
			})
		}
	}
}

func compareFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func idsOf(cands []*h4r.Candidate) []string {
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.Item.ID
	}
	return ids
}

func TestRecency(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name      string
		createdAt time.Time
		lambda    float64
		want      float64
		warns     bool
	}{
		{name: "created now", createdAt: testNow, want: 1},
		{name: "one day old", createdAt: testNow.Add(-day), lambda: 0.1, want: math.Exp(-0.1)},
		{name: "ten days old", createdAt: testNow.Add(-10 * day), lambda: 0.1, want: math.Exp(-1)},
		{name: "half a day old", createdAt: testNow.Add(-12 * time.Hour), lambda: 0.1, want: math.Exp(-0.05)},
		{name: "lambda 0 means no decay", createdAt: testNow.Add(-300 * day), lambda: 0, want: 1},
		{name: "custom lambda", createdAt: testNow.Add(-2 * day), lambda: 0.5, want: math.Exp(-1)},
		{name: "future date counts as age 0", createdAt: testNow.Add(3 * day), lambda: 0.1, want: 1},
		{name: "missing createdAt is as old as can be", createdAt: time.Time{}, lambda: 0.1, want: 0},
		{name: "negative lambda falls back to the default", createdAt: testNow.Add(-day), lambda: -1, want: math.Exp(-DefaultLambda), warns: true},
		{name: "NaN lambda falls back to the default", createdAt: testNow.Add(-day), lambda: math.NaN(), want: math.Exp(-DefaultLambda), warns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cand("a")
			c.Item.Metadata.CreatedAt = tt.createdAt
			ranked, warnings := Rank([]*h4r.Candidate{c}, Options{Weights: only(h4r.Recency), Lambda: tt.lambda, Now: testNow})
			if got := ranked[0].Signals[h4r.Recency]; math.Abs(got-tt.want) > tolerance {
				t.Errorf("recency = %.15g, want %.15g", got, tt.want)
			}
			if got := len(warnings) > 0; got != tt.warns {
				t.Errorf("warnings = %q, want some: %v", warnings, tt.warns)
			}
		})
	}
}

func TestFrequency(t *testing.T) {
	tests := []struct {
		name   string
		counts []int64
		want   []float64
	}{
		{name: "all zero gives 0", counts: []int64{0, 0}, want: []float64{0, 0}},
		{name: "single accessed item gets 1", counts: []int64{5}, want: []float64{1}},
		{name: "normalised by the largest log", counts: []int64{0, 9, 99}, want: []float64{0, math.Log(10) / math.Log(100), 1}},
		{name: "a negative count counts as 0", counts: []int64{-4, 3}, want: []float64{0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cands []*h4r.Candidate
			want := map[string]float64{}
			for i, n := range tt.counts {
				c := cand(fmt.Sprintf("i%d", i))
				c.Item.Metadata.AccessCount = n
				cands = append(cands, c)
				want[c.Item.ID] = tt.want[i]
			}
			assertValues(t, signalByID(t, cands, Options{}, h4r.Frequency), want)
		})
	}
}

func TestMetadataSignals(t *testing.T) {
	tests := []struct {
		name string
		meta h4r.Metadata
		want map[h4r.Signal]float64
	}{
		{
			name: "defaults when metadata is missing",
			meta: h4r.Metadata{},
			want: map[h4r.Signal]float64{h4r.Importance: 0.5, h4r.Trust: 0.5, h4r.Novelty: 1, h4r.Sensitivity: 1},
		},
		{
			name: "given values, novelty and sensitivity inverted",
			meta: h4r.Metadata{Importance: ptr(0.7), Trust: ptr(0.9), Novelty: ptr(0.1), Sensitivity: ptr(0.2)},
			want: map[h4r.Signal]float64{h4r.Importance: 0.7, h4r.Trust: 0.9, h4r.Novelty: 0.9, h4r.Sensitivity: 0.8},
		},
		{
			name: "extremes",
			meta: h4r.Metadata{Importance: ptr(0), Trust: ptr(1), Novelty: ptr(1), Sensitivity: ptr(0)},
			want: map[h4r.Signal]float64{h4r.Importance: 0, h4r.Trust: 1, h4r.Novelty: 0, h4r.Sensitivity: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cand("a")
			c.Item.Metadata = tt.meta
			for s, want := range tt.want {
				got := signalByID(t, []*h4r.Candidate{c}, Options{Weights: only(s)}, s)["a"]
				if math.Abs(got-want) > tolerance {
					t.Errorf("%s = %v, want %v", s, got, want)
				}
			}
		})
	}
}

func TestCausality(t *testing.T) {
	tests := []struct {
		name string
		ev   []h4r.Evidence
		want float64
	}{
		{name: "not reached by hops", ev: []h4r.Evidence{ft(3, 1)}, want: 0},
		{name: "an anchor gets none for itself", ev: []h4r.Evidence{ft(1, 9), hops(0)}, want: 0},
		{name: "one hop", ev: []h4r.Evidence{ft(3, 1), hops(1)}, want: 0.5},
		{name: "three hops", ev: []h4r.Evidence{hops(3)}, want: 0.25},
		{name: "negative distance counts as an anchor", ev: []h4r.Evidence{hops(-2)}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := signalByID(t, []*h4r.Candidate{cand("a", tt.ev...)}, Options{}, h4r.Causality)
			assertValues(t, got, map[string]float64{"a": tt.want})
		})
	}
}

func TestWeightNormalisation(t *testing.T) {
	// Every signal of this candidate is known: relevance 1 (single hit),
	// recency 1, frequency 0, importance 0.7, causality 0.5, novelty 0.9,
	// trust 0.6, sensitivity 0.8.
	c := cand("a", ft(2, 1), hops(1))
	c.Item.Metadata.Importance, c.Item.Metadata.Trust = ptr(0.7), ptr(0.6)
	c.Item.Metadata.Novelty, c.Item.Metadata.Sensitivity = ptr(0.1), ptr(0.2)
	seed := h4r.Weights{0, 0.25, 0.15, 0.20, 0.15, 0.10, 0.10, 0.05}
	seedScore := 0.25*1 + 0.15*0 + 0.20*0.7 + 0.15*0.5 + 0.10*0.9 + 0.10*0.6 + 0.05*0.8

	tests := []struct {
		name      string
		weights   h4r.Weights
		wantScore float64
		wantWarn  string // substring; "" means no warning
	}{
		{name: "sum 1 is used as is", weights: seed, wantScore: seedScore},
		{name: "sum 1 within rounding is not a warning", weights: h4r.Weights{0.1, 0.2, 0.3, 0.4 + 1e-12}, wantScore: 0.1*1 + 0.2*1 + 0.3*0 + (0.4+1e-12)*0.7},
		{name: "doubled weights give the same score", weights: scale(seed, 2), wantScore: seedScore, wantWarn: "summed to 2"},
		{name: "a single weight of 4 is scaled to 1", weights: h4r.Weights{h4r.Importance: 4}, wantScore: 0.7, wantWarn: "normalised"},
		{name: "all zero does not divide by zero", weights: h4r.Weights{}, wantScore: 0, wantWarn: "every score is 0"},
		{name: "a negative weight is not used", weights: h4r.Weights{h4r.Trust: -1, h4r.Importance: 1}, wantScore: 0, wantWarn: "every score is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ranked, warnings := Rank([]*h4r.Candidate{c}, Options{Weights: tt.weights, Now: testNow})
			if got := ranked[0].Score; math.IsNaN(got) || math.Abs(got-tt.wantScore) > 1e-9 {
				t.Errorf("score = %v, want %v", got, tt.wantScore)
			}
			switch {
			case tt.wantWarn == "" && len(warnings) > 0:
				t.Errorf("unexpected warnings %q", warnings)
			case tt.wantWarn != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.wantWarn)):
				t.Errorf("warnings = %q, want one containing %q", warnings, tt.wantWarn)
			}
		})
	}
}

func scale(w h4r.Weights, f float64) h4r.Weights {
	for i := range w {
		w[i] *= f
	}
	return w
}

func TestTieBreaking(t *testing.T) {
	older := func(id string, d time.Duration) *h4r.Candidate {
		c := cand(id)
		c.Item.Metadata.CreatedAt = testNow.Add(-d)
		return c
	}
	tests := []struct {
		name    string
		cands   []*h4r.Candidate
		weights h4r.Weights
		want    []string
	}{
		{
			name:    "higher score first",
			cands:   []*h4r.Candidate{cand("a", ft(1, 2)), cand("b", ft(3, 1))},
			weights: only(h4r.Relevance),
			want:    []string{"b", "a"},
		},
		{
			name:    "equal scores: newer first",
			cands:   []*h4r.Candidate{older("a", 48*time.Hour), older("b", time.Hour), older("c", 24*time.Hour)},
			weights: only(h4r.Importance),
			want:    []string{"b", "c", "a"},
		},
		{
			name:    "equal scores and recency: id ascending",
			cands:   []*h4r.Candidate{cand("m"), cand("b"), cand("z"), cand("a")},
			weights: only(h4r.Trust),
			want:    []string{"a", "b", "m", "z"},
		},
		{
			name:    "all-zero weights fall back to recency, then id",
			cands:   []*h4r.Candidate{older("b", time.Hour), older("a", time.Hour), older("c", 0)},
			weights: h4r.Weights{},
			want:    []string{"c", "a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every rotation of the input must give the same order.
			for shift := range tt.cands {
				in := append(slices.Clone(tt.cands[shift:]), tt.cands[:shift]...)
				ranked, _ := Rank(in, Options{Weights: tt.weights, Lambda: DefaultLambda, Now: testNow})
				got := make([]string, len(ranked))
				for i, r := range ranked {
					got[i] = r.Candidate.Item.ID
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("input rotated by %d: order %v, want %v", shift, got, tt.want)
				}
			}
		})
	}
}

func TestExplanation(t *testing.T) {
	tests := []struct {
		name    string
		cand    *h4r.Candidate
		weights h4r.Weights
		want    string
	}{
		{
			name: "top three by weighted contribution, not by raw value",
			// relevance 1, recency 1, importance 0.7, causality 0.5,
			// novelty 0.9, trust 0.6, sensitivity 0.8, frequency 0.
			cand: func() *h4r.Candidate {
				c := cand("a", ft(1, 1), hops(1))
				c.Item.Metadata.Importance, c.Item.Metadata.Trust = ptr(0.7), ptr(0.6)
				c.Item.Metadata.Novelty, c.Item.Metadata.Sensitivity = ptr(0.1), ptr(0.2)
				return c
			}(),
			// contributions: relevance .1, recency .05, frequency 0,
			// importance .21, causality .05, novelty .09, trust .12,
			// sensitivity .04.
			weights: h4r.Weights{0.1, 0.05, 0.1, 0.3, 0.1, 0.1, 0.2, 0.05},
			want:    "Score 0.660 (top signals: importance=0.70, trust=0.60, relevance=1.00)",
		},
		{
			name:    "fewer than three contributing signals",
			cand:    cand("a", ft(1, 1)),
			weights: h4r.Weights{h4r.Relevance: 0.75, h4r.Frequency: 0.25},
			want:    "Score 0.750 (top signals: relevance=1.00)",
		},
		{
			name:    "nothing contributed",
			cand:    cand("a", hops(0)),
			weights: only(h4r.Relevance),
			want:    "Score 0.000 (no signal contributed)",
		},
		{
			name: "equal contributions keep the signal order",
			cand: func() *h4r.Candidate {
				c := cand("a", ft(1, 1))
				c.Item.Metadata.Importance, c.Item.Metadata.Trust = ptr(1), ptr(1)
				return c
			}(),
			weights: h4r.Weights{h4r.Relevance: 1, h4r.Importance: 1, h4r.Trust: 1, h4r.Recency: 1},
			want:    "Score 1.000 (top signals: relevance=1.00, recency=1.00, importance=1.00)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ranked, _ := Rank([]*h4r.Candidate{tt.cand}, Options{Weights: tt.weights, Now: testNow})
			if got := ranked[0].Explanation; got != tt.want {
				t.Errorf("explanation\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSourceLabel(t *testing.T) {
	tests := []struct {
		name string
		ev   []h4r.Evidence
		want string
	}{
		{name: "full-text only", ev: []h4r.Evidence{ft(1, 1)}, want: "fulltext"},
		{name: "fixed order whatever the evidence order", ev: []h4r.Evidence{hops(1), vec(1, 1), ft(1, 1)}, want: "fulltext+vector+graph"},
		{name: "graph only", ev: []h4r.Evidence{hops(0)}, want: "graph"},
		{name: "duplicates once", ev: []h4r.Evidence{ft(1, 1), ft(2, 2)}, want: "fulltext"},
		{name: "unknown generators last, by name", ev: []h4r.Evidence{{Generator: "zeta"}, {Generator: "alpha"}, hops(0)}, want: "graph+alpha+zeta"},
		{name: "no evidence", ev: nil, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SourceLabel(cand("a", tt.ev...)); got != tt.want {
				t.Errorf("SourceLabel = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFusionValidate(t *testing.T) {
	tests := []struct {
		name      string
		fusion    Fusion
		wantField string // "" means valid
	}{
		{name: "zero value", fusion: Fusion{}},
		{name: "rrf with weights", fusion: Fusion{Method: FusionRRF, RRFK: 10, Weights: map[string]float64{"vector": 2}}},
		{name: "unknown method", fusion: Fusion{Method: "borda"}, wantField: "fusion.method"},
		{name: "negative weight", fusion: Fusion{Weights: map[string]float64{"vector": -1}}, wantField: "fusion.weights.vector"},
		{name: "NaN weight", fusion: Fusion{Weights: map[string]float64{"fulltext": math.NaN()}}, wantField: "fusion.weights.fulltext"},
		{name: "negative k", fusion: Fusion{Method: FusionRRF, RRFK: -5}, wantField: "fusion.rrfK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.fusion.Validate("fusion")
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != tt.wantField {
				t.Fatalf("Validate = %v, want invalid_argument on %s", err, tt.wantField)
			}
		})
	}
}

func TestInvalidFusionFallsBackWithWarning(t *testing.T) {
	cands := []*h4r.Candidate{cand("a", ft(9, 1)), cand("b", ft(1, 2))}
	ranked, warnings := Rank(cands, Options{Weights: only(h4r.Relevance), Now: testNow, Fusion: Fusion{Method: "borda"}})
	if len(warnings) != 1 || !strings.Contains(warnings[0], "borda") {
		t.Errorf("warnings = %q, want one naming the method", warnings)
	}
	// Relative fusion applied: b is the minimum, so 0 (RRF would give 61/62).
	if got := ranked[1].Signals[h4r.Relevance]; got != 0 {
		t.Errorf("relevance of the weaker hit = %v, want 0 (relative fusion)", got)
	}
}

func TestRankEmpty(t *testing.T) {
	ranked, warnings := Rank(nil, Options{Weights: only(h4r.Relevance)})
	if len(ranked) != 0 || len(warnings) != 0 {
		t.Errorf("Rank(nil) = %v, %q; want nothing", ranked, warnings)
	}
}

func BenchmarkRank1000(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	cands := make([]*h4r.Candidate, 1000)
	for i := range cands {
		c := cand(fmt.Sprintf("mem-%04d", i), ft(20*rng.Float64(), i+1), vec(rng.Float64(), 1000-i))
		if i%3 == 0 {
			c.Evidence = append(c.Evidence, hops(rng.IntN(4)))
		}
		m := &c.Item.Metadata
		m.CreatedAt = testNow.Add(-time.Duration(rng.IntN(2000)) * time.Hour)
		m.AccessCount = rng.Int64N(100)
		m.Importance, m.Trust = ptr(rng.Float64()), ptr(rng.Float64())
		cands[i] = c
	}
	w := h4r.Weights{0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05}
	for _, method := range []string{FusionRelative, FusionRRF} {
		b.Run(method, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Rank(cands, Options{Weights: w, Now: testNow, Fusion: Fusion{Method: method}})
			}
		})
	}
}

// TestDemotion: a superseded item's score is multiplied by
// SupersededFactor (ProposedSupersededFactor when proposed), one not valid
// at the ranking's time by NotValidFactor, both when both hold, and
// KeepSuperseded leaves supersession alone.
func TestDemotion(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	base := func() *h4r.Candidate {
		return &h4r.Candidate{Item: &h4r.Item{ID: "x", Metadata: h4r.Metadata{CreatedAt: now}},
			Evidence: []h4r.Evidence{{Generator: h4r.GenFullText, Score: 1, Rank: 1}}}
	}
	expired := func(c *h4r.Candidate) { c.Item.Metadata.ValidUntil = now.Add(-time.Hour) }
	notYet := func(c *h4r.Candidate) { c.Item.Metadata.ValidFrom = now.Add(time.Hour) }
	linked := func(c *h4r.Candidate) { c.SupersededBy = "y" }
	proposed := func(c *h4r.Candidate) { c.SupersededBy, c.SupersessionProposed = "y", true }
	tests := []struct {
		name   string
		change []func(*h4r.Candidate)
		keep   bool
		want   float64
	}{
		{"none", nil, false, 1},
		{"superseded", []func(*h4r.Candidate){linked}, false, SupersededFactor},
		{"proposed", []func(*h4r.Candidate){proposed}, false, ProposedSupersededFactor},
		{"kept superseded", []func(*h4r.Candidate){linked}, true, 1},
		{"expired", []func(*h4r.Candidate){expired}, false, NotValidFactor},
		{"not yet valid", []func(*h4r.Candidate){notYet}, false, NotValidFactor},
		{"superseded and expired", []func(*h4r.Candidate){linked, expired}, false, SupersededFactor * NotValidFactor},
		{"kept superseded still expired", []func(*h4r.Candidate){linked, expired}, true, NotValidFactor},
	}
	w := h4r.Weights{}
	w[h4r.Relevance] = 1
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain := base()
			c := base()
			for _, f := range tt.change {
				f(c)
			}
			opts := Options{Weights: w, Now: now, KeepSuperseded: tt.keep}
			p, _ := Rank([]*h4r.Candidate{plain}, opts)
			got, _ := Rank([]*h4r.Candidate{c}, opts)
			if ratio := got[0].Score / p[0].Score; math.Abs(ratio-tt.want) > 1e-12 {
				t.Errorf("score ratio %v, want %v (%s)", ratio, tt.want, got[0].Explanation)
			}
		})
	}
}

// A deferred explanation is written, when asked, as Rank writes it at once:
// from the score as ranked and the normalised weights, with the demotion's
// words.
func TestDeferredExplanation(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var cands []*h4r.Candidate
	for i := range 12 {
		c := &h4r.Candidate{Item: &h4r.Item{ID: fmt.Sprintf("c%02d", i), Metadata: h4r.Metadata{CreatedAt: now.Add(-time.Duration(i) * 30 * time.Hour)}},
			Evidence: []h4r.Evidence{{Generator: h4r.GenFullText, Score: float64(i%5) + 0.5, Rank: i + 1}}}
		c.Item.Metadata.Importance = ptr(float64(i%4) / 4)
		switch i % 3 {
		case 1:
			c.SupersededBy = "c00"
		case 2:
			c.Item.Metadata.ValidUntil = now.Add(-time.Hour)
		}
		cands = append(cands, c)
	}
	// Weights that do not sum to 1: the explanation reads the normalised ones.
	w := h4r.Weights{h4r.Relevance: 2, h4r.Recency: 1, h4r.Importance: 1}
	eager, _ := Rank(cands, Options{Weights: w, Now: now})
	deferred, _ := Rank(cands, Options{Weights: w, Now: now, DeferExplanations: true})
	for i := range eager {
		if deferred[i].Explanation != "" {
			t.Errorf("%s: deferred explanation written at once: %q", deferred[i].Candidate.Item.ID, deferred[i].Explanation)
		}
		if got, want := deferred[i].Explain(), eager[i].Explanation; got != want {
			t.Errorf("%s: deferred explanation\n got %q\nwant %q", deferred[i].Candidate.Item.ID, got, want)
		}
		if got := eager[i].Explain(); got != eager[i].Explanation {
			t.Errorf("%s: Explain of an explanation written at once = %q, want %q", eager[i].Candidate.Item.ID, got, eager[i].Explanation)
		}
	}
}
