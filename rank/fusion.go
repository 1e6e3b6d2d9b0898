package rank

import (
	"math"
	"slices"

	"github.com/h4r/h4r"
)

// Fusion methods.
const (
	// FusionRelative min-max normalises each text generator's raw scores
	// within the candidate set, (s−min)/(max−min), and takes their weighted
	// mean. It keeps the score gaps a generator reports.
	FusionRelative = "relative"
	// FusionRRF is reciprocal-rank fusion, Σ w/(k+rank), scaled so that an
	// item ranked first by every generator gets 1. It uses ranks only, so
	// generators with incomparable score scales fuse fairly.
	FusionRRF = "rrf"
)

// DefaultRRFK is the reciprocal-rank constant k when Fusion.RRFK is zero;
// 60 is the value of the original RRF paper.
const DefaultRRFK = 60

// Fusion says how the text generators' raw scores become the relevance
// signal. The zero value is relative fusion with equal weights.
type Fusion struct {
	Method  string             // FusionRelative (default when empty) or FusionRRF
	Weights map[string]float64 // per generator name; a generator not listed weighs 1
	RRFK    float64            // k of reciprocal-rank fusion; 0 means DefaultRRFK
	// Unscaled names generators whose scores are already on the 0–1 scale
	// of relevance (the session and time evidence of conversations):
	// relative fusion takes them as they are, clamped to [0, 1], instead of
	// min-max normalising them. Min-max would stretch the gap between the
	// best and the worst of them to the whole scale even where it is small.
	Unscaled map[string]bool
}

// Validate checks the method, the generator weights (finite, >= 0) and k.
// field prefixes the offending key in errors ("fusion" gives
// "fusion.weights.vector").
func (f Fusion) Validate(field string) error {
	switch f.Method {
	case "", FusionRelative, FusionRRF:
	default:
		return h4r.Errorf(h4r.EINVALID, field+".method", "unknown fusion method %q (want %s or %s)", f.Method, FusionRelative, FusionRRF)
	}
	for name, w := range f.Weights {
		if !finiteNonNegative(w) {
			return h4r.Errorf(h4r.EINVALID, field+".weights."+name, "generator weight must be a finite number >= 0, got %v", w)
		}
	}
	if !finiteNonNegative(f.RRFK) {
		return h4r.Errorf(h4r.EINVALID, field+".rrfK", "k must be a finite number >= 0, got %v", f.RRFK)
	}
	return nil
}

func finiteNonNegative(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// relevance returns the fused relevance of each candidate, in input order.
// Only text generators (every generator but the graph one) count, and only
// those that found something in this request: a generator that found
// nothing does not dilute the others. A candidate a generator did not find
// gets 0 from it; one found only by hops has relevance 0.
func (f Fusion) relevance(cands []*h4r.Candidate) ([]float64, []string) {
	var warnings []string
	if err := f.Validate("fusion"); err != nil {
		warnings = append(warnings, "fusion settings are invalid ("+h4r.ErrorMessage(err)+"): relative fusion with equal weights applies")
		f = Fusion{}
	}
	gens := textGenerators(cands)
	out := make([]float64, len(cands))
	if len(gens) == 0 {
		return out, warnings
	}
	weight := func(gen string) float64 {
		if w, ok := f.Weights[gen]; ok {
			return w
		}
		return 1
	}
	if f.Method == FusionRRF {
		f.fuseRRF(cands, gens, weight, out)
	} else {
		fuseRelative(cands, gens, weight, f.Unscaled, out)
	}
	return out, warnings
}

// textGenerators lists the text generators that found at least one
// candidate, in the fixed order of compareGenerators.
func textGenerators(cands []*h4r.Candidate) []string {
	var gens []string
	for _, c := range cands {
		for _, e := range c.Evidence {
			if e.Generator != h4r.GenGraph && !slices.Contains(gens, e.Generator) {
				gens = append(gens, e.Generator)
			}
		}
	}
	slices.SortFunc(gens, compareGenerators)
	return gens
}

// fuseRelative writes Σ w·minmax(s) / Σ w into out (Σ w·s for unscaled
// generators). A generator whose scores are all equal (or that has a
// single hit) gives its hits 1.
// Non-finite raw scores count as the worst score.
func fuseRelative(cands []*h4r.Candidate, gens []string, weight func(string) float64, unscaled map[string]bool, out []float64) {
	var totalWeight float64
	for _, gen := range gens {
		w := weight(gen)
		if w == 0 {
			continue
		}
		totalWeight += w
		if unscaled[gen] {
			for i, c := range cands {
				if e, ok := c.Find(gen); ok && finite(e.Score) {
					out[i] += w * min(max(e.Score, 0), 1)
				}
			}
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, c := range cands {
			if e, ok := c.Find(gen); ok && finite(e.Score) {
				lo, hi = min(lo, e.Score), max(hi, e.Score)
			}
		}
		for i, c := range cands {
			e, ok := c.Find(gen)
			switch {
			case !ok || !finite(e.Score):
			case hi == lo:
				out[i] += w
			default:
				out[i] += w * (e.Score - lo) / (hi - lo)
			}
		}
	}
	if totalWeight == 0 {
		clear(out)
		return
	}
	for i := range out {
		out[i] /= totalWeight
	}
}

// fuseRRF writes Σ w/(k+rank) / Σ w/(k+1) into out: the reciprocal-rank
// sum scaled so that the best possible (first for every generator) is 1.
// An evidence rank under 1 (not set) counts as 1.
func (f Fusion) fuseRRF(cands []*h4r.Candidate, gens []string, weight func(string) float64, out []float64) {
	k := f.RRFK
	if k == 0 {
		k = DefaultRRFK
	}
	var best float64
	for _, gen := range gens {
		best += weight(gen) / (k + 1)
	}
	if best == 0 {
		return
	}
	for i, c := range cands {
		var sum float64
		for _, gen := range gens {
			if e, ok := c.Find(gen); ok {
				sum += weight(gen) / (k + float64(max(e.Rank, 1)))
			}
		}
		out[i] = sum / best
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// Relevance returns the fused relevance of each candidate, in input order,
// as ranking computes it (without the other signals): what a stage that
// needs the first pass's best items before ranking (the feedback of the
// query vector) orders them by. Invalid settings fall back as in Rank.
func (f Fusion) Relevance(cands []*h4r.Candidate) []float64 {
	out, _ := f.relevance(cands)
	return out
}
