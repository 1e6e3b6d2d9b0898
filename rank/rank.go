package rank

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r"
)

// DefaultLambda is the default recency decay per day
// (H4R_RECENCY_DECAY_LAMBDA): an item loses about 10% of its recency a day
// and half of it in a week. Rank uses it in place of an invalid Lambda.
const DefaultLambda = 0.1

// Factors that demote an item whose statement no longer holds: its score
// is multiplied by them after the weighted sum, so the signals and their
// weights still order such items among themselves. A restatement often
// shares few words with the question that the first statement matched
// ("which city do I live in": "I live in Paris" against "I just moved to
// Berlin"), so a writer's supersedes link costs three quarters of the
// score; a question about the earlier value is answered with the
// penalty off (the engine lifts it when the question names an earlier
// time, or the request says superseded: keep). An inferred supersession
// (same kind, groups and subject, h4r.SubjectKey) and a validity interval
// that does not hold are less certain, so they cost half.
const (
	SupersededFactor         = 0.25 // a newer item the caller may see supersedes it (a supersedes link)
	ProposedSupersededFactor = 0.5  // the engine proposed the supersession (same subject, newer)
	NotValidFactor           = 0.5  // its validFrom/validUntil interval does not hold the request's time
)

// Options configure one ranking.
type Options struct {
	// Weights of the eight signals, validated by the caller. Rank normalises
	// them to sum to 1 and says so in a warning when it had to.
	Weights h4r.Weights
	// Lambda is the recency decay per day. Zero means no decay (every dated
	// item has recency 1); a negative or non-finite value is replaced by
	// DefaultLambda with a warning.
	Lambda float64
	// Now is the clock recency is measured against; zero means time.Now().
	Now time.Time
	// Fusion says how text generators' scores become relevance.
	Fusion Fusion
	// KeepSuperseded leaves superseded items' scores alone (a request's
	// superseded: keep); otherwise they are multiplied by
	// SupersededFactor or ProposedSupersededFactor.
	KeepSuperseded bool
	// ValidAt is the time an item's validFrom/validUntil must hold (else
	// its score is multiplied by NotValidFactor); zero means Now.
	ValidAt time.Time
	// DeferExplanations leaves Ranked.Explanation empty for Ranked.Explain
	// to write when asked: a pack shows the explanations of a few of the
	// hundred-odd candidates it ranks, and writing every one costs a few per
	// cent of a pack's CPU time.
	DeferExplanations bool
}

// Ranked is one candidate with its signals, score and a one-line
// explanation of the score.
type Ranked struct {
	Candidate   *h4r.Candidate
	Signals     h4r.Signals
	Score       float64
	Explanation string // "Score 0.743 (top signals: relevance=0.91, recency=0.85, importance=0.70)"

	// What Explain writes the explanation from when Rank deferred it,
	// beside Score and Signals: the normalised weights (shared by every
	// candidate of one ranking) and the demotion's words.
	weights *h4r.Weights
	why     string
}

// Explain returns the explanation of r's score: Explanation, or when Rank
// deferred it (Options.DeferExplanations), the same text written now.
func (r *Ranked) Explain() string {
	if r.Explanation != "" || r.weights == nil {
		return r.Explanation
	}
	return explain(r.Score, *r.weights, r.Signals) + r.why
}

// Rank scores every candidate and returns them best first. Ties break by
// recency (newer first), then by id, so the order is fully determined by the
// input. Warnings say what Rank had to adjust (weights not summing to 1, an
// unknown fusion method); they belong in the pack's warnings.
func Rank(cands []*h4r.Candidate, opts Options) (ranked []Ranked, warnings []string) {
	weights, warnings := normalisedWeights(opts.Weights)

	lambda := opts.Lambda
	if lambda < 0 || math.IsNaN(lambda) || math.IsInf(lambda, 0) {
		warnings = append(warnings, "recency decay lambda "+formatFloat(lambda)+" is not a finite number >= 0: "+formatFloat(DefaultLambda)+" applies")
		lambda = DefaultLambda
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}

	validAt := opts.ValidAt
	if validAt.IsZero() {
		validAt = now
	}

	relevance, fusionWarnings := opts.Fusion.relevance(cands)
	warnings = append(warnings, fusionWarnings...)

	// Frequency is normalised by the largest log-count among the candidates.
	var maxLogAccess float64
	for _, c := range cands {
		maxLogAccess = max(maxLogAccess, logAccess(c.Item))
	}

	scored := make([]Ranked, len(cands))
	shared := &weights
	for i, c := range cands {
		m := &c.Item.Metadata // read in place: the struct is large and copied for every candidate otherwise
		var s h4r.Signals
		s[h4r.Relevance] = relevance[i]
		s[h4r.Recency] = recency(m.CreatedAt, now, lambda)
		if maxLogAccess > 0 {
			s[h4r.Frequency] = logAccess(c.Item) / maxLogAccess
		}
		s[h4r.Importance] = m.ImportanceValue()
		s[h4r.Causality] = causality(c)
		s[h4r.Novelty] = 1 - m.NoveltyValue()
		s[h4r.Trust] = m.TrustValue()
		s[h4r.Sensitivity] = 1 - m.SensitivityValue()
		score := weights.Score(s)
		factor, why := demotion(c, validAt, opts.KeepSuperseded)
		score *= factor
		if opts.DeferExplanations {
			scored[i] = Ranked{Candidate: c, Signals: s, Score: score, weights: shared, why: why}
		} else {
			scored[i] = Ranked{Candidate: c, Signals: s, Score: score, Explanation: explain(score, weights, s) + why}
		}
	}
	// Sort positions rather than the (large) results. The input position is
	// the last tie-break, so that even duplicate ids (which Merge never
	// produces) come out in a determined order.
	order := make([]int, len(scored))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int {
		a, b := &scored[i], &scored[j]
		return cmp.Or(
			Order(a.Score, a.Signals[h4r.Recency], a.Candidate.Item.ID, b.Score, b.Signals[h4r.Recency], b.Candidate.Item.ID),
			cmp.Compare(i, j),
		)
	})
	ranked = make([]Ranked, len(order))
	for k, i := range order {
		ranked[k] = scored[i]
	}
	return ranked, warnings
}

// demotion is the factor c's score is multiplied by, and what the
// explanation says of it ("" when 1).
func demotion(c *h4r.Candidate, validAt time.Time, keepSuperseded bool) (float64, string) {
	factor, why := 1.0, ""
	if c.SupersededBy != "" && !keepSuperseded {
		f, how := SupersededFactor, "superseded by "
		if c.SupersessionProposed {
			f, how = ProposedSupersededFactor, "probably superseded by "
		}
		factor *= f
		why += "; " + how + c.SupersededBy + " (×" + strconv.FormatFloat(f, 'f', 2, 64) + ")"
	}
	if !c.Item.Metadata.ValidAt(validAt) {
		factor *= NotValidFactor
		why += "; not valid at " + validAt.UTC().Format(time.RFC3339) + " (×" + strconv.FormatFloat(NotValidFactor, 'f', 2, 64) + ")"
	}
	return factor, why
}

// normalisedWeights scales w to sum to 1. Weights that cannot be scaled
// (all zero, negative, not finite) are the caller's error; rather than divide
// by zero, every weight becomes 0, every score 0, and the order falls back
// to the tie-breaks.
func normalisedWeights(w h4r.Weights) (h4r.Weights, []string) {
	if err := w.Validate("weights"); err != nil {
		return h4r.Weights{}, []string{"weights cannot be normalised (" + h4r.ErrorMessage(err) + "): every score is 0 and the order falls back to recency, then id"}
	}
	n, scaled := w.Normalized()
	if !scaled {
		return n, nil
	}
	return n, []string{"weights summed to " + formatFloat(w.Sum()) + ", not 1: they were normalised to sum to 1"}
}

// recency is exp(−λ·age in days). A future createdAt counts as age 0; an
// item without createdAt is as old as can be.
func recency(createdAt, now time.Time, lambda float64) float64 {
	if createdAt.IsZero() {
		return 0
	}
	age := now.Sub(createdAt)
	if age < 0 {
		age = 0
	}
	return Decay(age.Hours()/24, lambda)
}

// Decay is exp(−λ·ageDays): the recency of an item ageDays old.
func Decay(ageDays, lambda float64) float64 { return math.Exp(-lambda * ageDays) }

// Order compares two ranked entries as Rank orders them: the higher score
// first, then the newer (higher recency), then the smaller id. It compares
// lazily, because the tuner calls it in its inner loop.
func Order(scoreA, recencyA float64, idA string, scoreB, recencyB float64, idB string) int {
	switch {
	case scoreA != scoreB:
		return cmp.Compare(scoreB, scoreA)
	case recencyA != recencyB:
		return cmp.Compare(recencyB, recencyA)
	}
	return strings.Compare(idA, idB)
}

// logAccess is log(accessCount + 1), the un-normalised frequency.
func logAccess(it *h4r.Item) float64 {
	return math.Log1p(float64(max(it.Metadata.AccessCount, 0)))
}

// causality is 1/(1+d) for d ≥ 1 hops from the nearest anchor, and 0 when
// the graph generator did not reach the item. An anchor gets no causality
// for itself: the default anchors are the top text hits, and causality 1
// for them only counted their relevance a second time.
func causality(c *h4r.Candidate) float64 {
	e, ok := c.Find(h4r.GenGraph)
	if !ok || e.Distance <= 0 {
		return 0
	}
	return 1 / (1 + float64(e.Distance))
}

// explain writes "Score 0.743 (top signals: relevance=0.91, …)" with the
// (at most) three signals that contributed most to the score (wᵢ·sᵢ).
// Signals that contributed nothing are not "top signals".
func explain(score float64, w h4r.Weights, s h4r.Signals) string {
	type contribution struct {
		signal h4r.Signal
		value  float64
	}
	top := make([]contribution, 0, h4r.NumSignals)
	for i := range s {
		if c := w[i] * s[i]; c > 0 {
			top = append(top, contribution{h4r.Signal(i), c})
		}
	}
	// Stable: equal contributions keep the item contract's signal order.
	slices.SortStableFunc(top, func(a, b contribution) int { return cmp.Compare(b.value, a.value) })
	var b strings.Builder
	b.WriteString("Score ")
	b.WriteString(strconv.FormatFloat(score, 'f', 3, 64))
	if len(top) == 0 {
		b.WriteString(" (no signal contributed)")
		return b.String()
	}
	b.WriteString(" (top signals: ")
	for i, c := range top[:min(3, len(top))] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.signal.String())
		b.WriteByte('=')
		b.WriteString(strconv.FormatFloat(s[c.signal], 'f', 2, 64))
	}
	b.WriteByte(')')
	return b.String()
}

// SourceLabel names the generators that found c, "+"-joined in a fixed
// order: "fulltext+vector+graph", then any other generator alphabetically.
func SourceLabel(c *h4r.Candidate) string {
	names := make([]string, 0, len(c.Evidence))
	for _, e := range c.Evidence {
		if !slices.Contains(names, e.Generator) {
			names = append(names, e.Generator)
		}
	}
	slices.SortFunc(names, compareGenerators)
	return strings.Join(names, "+")
}

// compareGenerators orders generator names: full-text, vector, graph, then
// any other by name. Fusion sums in this order too, so that relevance does
// not depend on which generator answered first.
func compareGenerators(a, b string) int {
	return cmp.Or(cmp.Compare(generatorOrder(a), generatorOrder(b)), strings.Compare(a, b))
}

func generatorOrder(name string) int {
	switch name {
	case h4r.GenFullText:
		return 0
	case h4r.GenVector:
		return 1
	case h4r.GenGraph:
		return 2
	}
	return 3
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
