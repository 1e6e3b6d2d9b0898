package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/rank"
)

// TuneQuery is one query's cached candidates: everything the ranking of any
// weights and λ needs, collected once through the real pipeline, so that a
// weight search costs arithmetic instead of requests.
type TuneQuery struct {
	Dataset  string          `json:"dataset"`
	ID       string          `json:"id"`
	Category string          `json:"category,omitempty"`
	Judged   Judgments       `json:"judged"`
	Cands    []TuneCandidate `json:"candidates"`
}

// CacheSchema names the version of the tuning cache file's JSON shape.
const CacheSchema = "h4r.bench.cache/v1"

// Cache is the file form of collected queries (h4r bench tune
// --save-cache), so that the weight search can be rerun without the
// datasets' queries being run again.
type Cache struct {
	Schema  string       `json:"schema"`
	Lambda  float64      `json:"recencyDecayLambda"` // λ the signals were collected at
	Queries []*TuneQuery `json:"queries"`
}

// ReadCache reads a cache file written by WriteJSON(Cache).
func ReadCache(path string) (*Cache, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the tuning cache: %w", err)
	}
	var c Cache
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Schema != CacheSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", path, c.Schema, CacheSchema)
	}
	return &c, nil
}

// TuneCandidate is one candidate's signals and its age. Recency is
// recomputed from AgeDays for every λ tried; the other seven signals do not
// depend on the weights.
type TuneCandidate struct {
	ID      string      `json:"id"`
	Signals h4r.Signals `json:"signals"`
	AgeDays float64     `json:"ageDays,omitempty"` // age at the run's clock, as the ranker measures it
}

// Params are what the tuner searches: the eight weights and λ.
type Params struct {
	Weights h4r.Weights `json:"weights"`
	Lambda  float64     `json:"recencyDecayLambda"`
}

// SeedWeights are the seven starting weights of docs/concepts.md, relevance 0.
func SeedWeights() h4r.Weights {
	var w h4r.Weights
	w[h4r.Recency], w[h4r.Frequency], w[h4r.Importance], w[h4r.Causality] = 0.25, 0.15, 0.20, 0.15
	w[h4r.Novelty], w[h4r.Trust], w[h4r.Sensitivity] = 0.10, 0.10, 0.05
	return w
}

// RelevanceOnly ranks by relevance alone.
func RelevanceOnly() h4r.Weights {
	var w h4r.Weights
	w[h4r.Relevance] = 1
	return w
}

// NewTuneQueries turns a dataset's runs into cached queries. Ages come from
// the documents' createdAt against ds.Now; an undated document was stamped
// at ingest with the run's clock, so its age is 0.
func NewTuneQueries(ds *Dataset, runs []QueryRun) []*TuneQuery {
	created := make(map[string]time.Time, len(ds.Docs))
	for _, d := range ds.Docs {
		created[d.ID] = d.CreatedAt
	}
	out := make([]*TuneQuery, len(runs))
	for i, r := range runs {
		q := &TuneQuery{Dataset: ds.Name, ID: r.Query.ID, Category: r.Query.Category, Judged: ds.Qrels[r.Query.ID]}
		q.Cands = make([]TuneCandidate, len(r.Ranked))
		for j, c := range r.Ranked {
			var age float64
			if t := created[c.ID]; !t.IsZero() {
				age = max(ds.Now.Sub(t), 0).Hours() / 24
			}
			q.Cands[j] = TuneCandidate{ID: c.ID, Signals: c.Signals, AgeDays: age}
		}
		out[i] = q
	}
	return out
}

// scored is a candidate's score under one setting, with the ranker's
// tie-breaks.
type scored struct {
	score, recency float64
	id             string
}

// Rank orders q's candidates under p exactly as the ranker does: score
// Σ wᵢ·sᵢ with normalised weights, ties by recency (newer first), then id.
// It returns the top k ids (all when k <= 0).
func (p Params) Rank(q *TuneQuery, k int) []string {
	w, _ := p.Weights.Normalized()
	buf := make([]scored, len(q.Cands))
	for i, c := range q.Cands {
		s := c.Signals
		s[h4r.Recency] = 1 // an undated item was stamped at ingest: age 0
		if c.AgeDays != 0 {
			s[h4r.Recency] = rank.Decay(c.AgeDays, p.Lambda)
		}
		buf[i] = scored{w.Score(s), s[h4r.Recency], c.ID}
	}
	if k <= 0 || k >= len(buf) {
		slices.SortFunc(buf, func(a, b scored) int {
			return rank.Order(a.score, a.recency, a.id, b.score, b.recency, b.id)
		})
	} else {
		buf = topK(buf, k)
	}
	ids := make([]string, len(buf))
	for i, s := range buf {
		ids[i] = s.id
	}
	return ids
}

// better reports whether a ranks before b, as the ranker orders them.
func better(a, b *scored) bool {
	return rank.Order(a.score, a.recency, a.id, b.score, b.recency, b.id) < 0
}

// topK returns the best k of buf, best first, by insertion into a sorted
// prefix: most candidates lose against the k-th and cost one comparison.
func topK(buf []scored, k int) []scored {
	top := make([]scored, 0, k)
	for i := range buf {
		c := &buf[i]
		if len(top) == k && !better(c, &top[k-1]) {
			continue
		}
		j := len(top)
		if j < k {
			top = append(top, *c)
		} else {
			j = k - 1
		}
		for j > 0 && better(c, &top[j-1]) {
			top[j] = top[j-1]
			j--
		}
		top[j] = *c
	}
	return top
}

// MeanMetrics scores p on queries: the mean of each metric over the
// queries of each dataset, then the mean over datasets (each dataset counts
// the same, however many queries it has). It also returns the per-dataset
// means.
func MeanMetrics(qs []*TuneQuery, p Params) (Metrics, map[string]Metrics) {
	sums := map[string]Metrics{}
	counts := map[string]int{}
	for _, q := range qs {
		m := sums[q.Dataset]
		m.add(Score(p.Rank(q, 100), q.Judged))
		sums[q.Dataset] = m
		counts[q.Dataset]++
	}
	names := make([]string, 0, len(sums))
	for name := range sums {
		names = append(names, name)
	}
	slices.Sort(names) // a fixed order of float additions
	var macro Metrics
	for _, name := range names {
		sums[name] = sums[name].scale(1 / float64(counts[name]))
		macro.add(sums[name])
	}
	if len(sums) > 0 {
		macro = macro.scale(1 / float64(len(sums)))
	}
	return macro, sums
}

// objective is the tuner's measure: macro-averaged nDCG@10. Datasets are
// summed in order of first appearance, never in map order: float addition
// is not associative, and a last-bit difference can flip a near-tie of
// the search and so change the weights it ends with.
func objective(qs []*TuneQuery, p Params) float64 {
	_, means := datasetNDCG(qs, p)
	if len(means) == 0 {
		return 0
	}
	var total float64
	for _, m := range means {
		total += m
	}
	return total / float64(len(means))
}

// datasetNDCG returns each dataset's mean nDCG@10 under p, datasets in
// order of first appearance.
func datasetNDCG(qs []*TuneQuery, p Params) ([]string, []float64) {
	var names []string
	var sums []float64
	var counts []int
	at := map[string]int{}
	for _, q := range qs {
		i, ok := at[q.Dataset]
		if !ok {
			i = len(names)
			at[q.Dataset] = i
			names = append(names, q.Dataset)
			sums = append(sums, 0)
			counts = append(counts, 0)
		}
		sums[i] += NDCG(p.Rank(q, 10), q.Judged, 10)
		counts[i]++
	}
	for i := range sums {
		sums[i] /= float64(counts[i])
	}
	return names, sums
}

// FloorSlack is how much nDCG@10 the tuned weights may lose against
// relevance-only on a dataset whose metadata is constant (the public
// collections): there the other signals carry no information, so weights
// that lose more are fitting the synthetic set at the real data's cost.
const FloorSlack = 0.005

// floorPenalty weighs a shortfall under a floor in the tuner's target: far
// above any gain elsewhere, so that the search treats the floor as a
// constraint yet can still climb out of a start that breaks it.
const floorPenalty = 100

// constantMetadata reports, for each dataset of qs, whether every
// candidate of every query carries the same value of every signal but
// relevance and causality (the signals computed per query) and the same
// age: the case of the public collections, which have no dates, scores or
// access counts.
func constantMetadata(qs []*TuneQuery) map[string]bool {
	type first struct {
		s   h4r.Signals
		age float64
	}
	firsts := map[string]first{}
	out := map[string]bool{}
	for _, q := range qs {
		if _, ok := out[q.Dataset]; !ok {
			out[q.Dataset] = true
		}
		for _, c := range q.Cands {
			f, ok := firsts[q.Dataset]
			if !ok {
				firsts[q.Dataset] = first{c.Signals, c.AgeDays}
				continue
			}
			if c.AgeDays != f.age {
				out[q.Dataset] = false
			}
			for s := range h4r.NumSignals {
				if sig := h4r.Signal(s); sig != h4r.Relevance && sig != h4r.Causality && c.Signals[sig] != f.s[sig] {
					out[q.Dataset] = false
				}
			}
		}
	}
	return out
}

// Floors returns the least mean nDCG@10 the tuner accepts on each group of
// qs where the signals other than relevance carry no information, namely
// relevance-only's − FloorSlack:
//   - every dataset whose metadata is constant (the public collections),
//     keyed by its name;
//   - the queries of category CatRelevance of any dataset, keyed
//     FloorGroup(dataset, CatRelevance): their answer is decided by the
//     text, and every other signal is noise by design. Without this floor
//     the weights were free to let a recent, important item that barely
//     matches outrank the one that matches (the demo corpus's labelled
//     queries lost 0.909 → 0.844 that way).
func Floors(qs []*TuneQuery) map[string]float64 {
	constant := constantMetadata(qs)
	relevanceOnly := Params{Weights: RelevanceOnly(), Lambda: 0.1}
	names, means := datasetNDCG(qs, relevanceOnly)
	floors := map[string]float64{}
	for i, name := range names {
		if constant[name] {
			floors[name] = means[i] - FloorSlack
		}
	}
	for group, m := range categoryNDCG(qs, relevanceOnly, CatRelevance) {
		floors[group] = m - FloorSlack
	}
	return floors
}

// FloorGroup names the floor of one category's queries in one dataset.
func FloorGroup(dataset, category string) string { return dataset + "/" + category }

// categoryNDCG returns the mean nDCG@10 under p of the queries of the
// given category, per dataset, keyed FloorGroup(dataset, category).
func categoryNDCG(qs []*TuneQuery, p Params, category string) map[string]float64 {
	sums, counts := map[string]float64{}, map[string]int{}
	for _, q := range qs {
		if q.Category != category {
			continue
		}
		g := FloorGroup(q.Dataset, category)
		sums[g] += NDCG(p.Rank(q, 10), q.Judged, 10)
		counts[g]++
	}
	for g := range sums {
		sums[g] /= float64(counts[g])
	}
	return sums
}

// target is what coordinate ascent maximises: the objective, less
// floorPenalty times each shortfall under a floor.
func target(qs []*TuneQuery, p Params, floors map[string]float64) float64 {
	names, means := datasetNDCG(qs, p)
	if len(means) == 0 {
		return 0
	}
	var total, short float64
	for i, m := range means {
		total += m
		if f, ok := floors[names[i]]; ok && m < f {
			short += f - m
		}
	}
	if hasCategoryFloor(floors, names) {
		for g, m := range categoryNDCG(qs, p, CatRelevance) {
			if f, ok := floors[g]; ok && m < f {
				short += f - m
			}
		}
	}
	return total/float64(len(means)) - floorPenalty*short
}

// hasCategoryFloor reports whether floors holds a floor that is not a
// dataset's (the tuner's inner loop skips ranking the category otherwise).
func hasCategoryFloor(floors map[string]float64, datasets []string) bool {
	for g := range floors {
		if !slices.Contains(datasets, g) {
			return true
		}
	}
	return false
}

// Step is one accepted move of coordinate ascent.
type Step struct {
	Restart int     `json:"restart"`
	Param   string  `json:"param"` // a signal name or "lambda"; "start" for a starting point
	Value   float64 `json:"value"`
	Train   float64 `json:"train"` // objective after the move
}

// Tuner searches weights and λ by coordinate ascent with random restarts:
// from each starting point, it tries every grid value of one parameter at a
// time (in a random order each round), keeps the best, and stops after a
// round that improved nothing.
type Tuner struct {
	Seed       uint64
	Restarts   int       // random starting points beyond the fixed ones
	Grid       []float64 // values tried for each weight (unnormalised)
	LambdaGrid []float64 // values tried for λ; empty: λ stays at Start's
	MaxRounds  int
	Starts     []Params // fixed starting points (e.g. relevance-only, current defaults)
	Workers    int
}

// TunerOption configures NewTuner.
type TunerOption func(*Tuner)

// WithSeed sets the random seed of restarts, parameter order and folds.
func WithSeed(seed uint64) TunerOption { return func(t *Tuner) { t.Seed = seed } }

// WithRestarts sets the number of random starting points.
func WithRestarts(n int) TunerOption { return func(t *Tuner) { t.Restarts = max(n, 0) } }

// WithStarts adds fixed starting points.
func WithStarts(p ...Params) TunerOption {
	return func(t *Tuner) { t.Starts = append(t.Starts, p...) }
}

// WithLambdaGrid sets the λ values tried (nil: λ is not tuned).
func WithLambdaGrid(g []float64) TunerOption { return func(t *Tuner) { t.LambdaGrid = g } }

// NewTuner returns a tuner with a 0.05-step weight grid, a logarithmic λ
// grid, 4 random restarts and at most 8 rounds per start.
func NewTuner(opts ...TunerOption) *Tuner {
	t := &Tuner{Seed: 1, Restarts: 4, MaxRounds: 8, Workers: runtime.GOMAXPROCS(0),
		LambdaGrid: []float64{0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3}}
	for i := 0; i <= 20; i++ {
		t.Grid = append(t.Grid, float64(i)*0.05)
	}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Fit returns the best parameters found on train, their objective, and the
// path of accepted moves. It honours ctx between moves.
func (t *Tuner) Fit(ctx context.Context, train []*TuneQuery) (Params, float64, []Step, error) {
	rng := rand.New(rand.NewPCG(t.Seed, 0x68347221))
	starts := slices.Clone(t.Starts)
	if len(starts) == 0 {
		starts = append(starts, Params{Weights: RelevanceOnly(), Lambda: 0.1})
	}
	for range t.Restarts {
		var p Params
		for i := range p.Weights {
			p.Weights[i] = t.Grid[rng.IntN(len(t.Grid))]
		}
		if p.Weights.Sum() == 0 {
			p.Weights[h4r.Relevance] = 1
		}
		p.Lambda = starts[0].Lambda
		if len(t.LambdaGrid) > 0 {
			p.Lambda = t.LambdaGrid[rng.IntN(len(t.LambdaGrid))]
		}
		starts = append(starts, p)
	}
	var (
		best      Params
		bestScore = math.Inf(-1)
		path      []Step
		floors    = Floors(train)
	)
	for r, start := range starts {
		p, score, steps, err := t.climb(ctx, train, floors, start, r, rng)
		if err != nil {
			return best, bestScore, path, err
		}
		path = append(path, steps...)
		if score > bestScore+1e-12 {
			best, bestScore = p, score
		}
	}
	n, _ := best.Weights.Normalized()
	best.Weights = roundWeights(n)
	return best, target(train, best, floors), path, nil
}

// climb runs coordinate ascent from start.
func (t *Tuner) climb(ctx context.Context, train []*TuneQuery, floors map[string]float64, start Params, restart int, rng *rand.Rand) (Params, float64, []Step, error) {
	cur := start
	curScore := target(train, cur, floors)
	steps := []Step{{Restart: restart, Param: "start", Train: curScore}}
	nParams := h4r.NumSignals
	if len(t.LambdaGrid) > 0 {
		nParams++
	}
	for range max(t.MaxRounds, 1) {
		improved := false
		for _, param := range rng.Perm(nParams) {
			if err := ctx.Err(); err != nil {
				return cur, curScore, steps, err
			}
			grid := t.Grid
			if param == h4r.NumSignals {
				grid = t.LambdaGrid
			}
			cands := make([]Params, 0, len(grid))
			for _, v := range grid {
				p := cur
				if param == h4r.NumSignals {
					p.Lambda = v
				} else {
					p.Weights[param] = v
				}
				if p.Weights.Sum() > 0 && p != cur {
					cands = append(cands, p)
				}
			}
			scores := t.scoreAll(train, floors, cands)
			bi := -1
			for i, s := range scores {
				if s > curScore+1e-9 && (bi < 0 || s > scores[bi]) {
					bi = i
				}
			}
			if bi >= 0 {
				cur, curScore, improved = cands[bi], scores[bi], true
				name, value := "lambda", cur.Lambda
				if param < h4r.NumSignals {
					name, value = h4r.Signal(param).String(), cur.Weights[param]
				}
				steps = append(steps, Step{Restart: restart, Param: name, Value: value, Train: curScore})
			}
		}
		if !improved {
			break
		}
	}
	return cur, curScore, steps, nil
}

// scoreAll evaluates candidates concurrently.
func (t *Tuner) scoreAll(train []*TuneQuery, floors map[string]float64, cands []Params) []float64 {
	out := make([]float64, len(cands))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(t.Workers, 1) {
		wg.Go(func() {
			for i := range next {
				out[i] = target(train, cands[i], floors)
			}
		})
	}
	for i := range cands {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// roundWeights rounds normalised weights to 3 decimals, keeping the sum 1 by
// giving the rounding error to the largest weight.
func roundWeights(w h4r.Weights) h4r.Weights {
	var sum float64
	largest := 0
	for i := range w {
		w[i] = math.Round(w[i]*1000) / 1000
		sum += w[i]
		if w[i] > w[largest] {
			largest = i
		}
	}
	w[largest] = math.Round((w[largest]+1-sum)*1000) / 1000
	return w
}

// Folds splits queries into k folds for cross-validation, per dataset (so
// each fold holds a share of every dataset): each dataset's queries are
// shuffled with seed and dealt round-robin. It returns, per fold, the
// indexes of its test queries; every query is in exactly one fold.
func Folds(qs []*TuneQuery, k int, seed uint64) ([][]int, error) {
	if k < 2 {
		return nil, fmt.Errorf("folds: want k >= 2, got %d", k)
	}
	byDataset := map[string][]int{}
	var names []string
	for i, q := range qs {
		if _, ok := byDataset[q.Dataset]; !ok {
			names = append(names, q.Dataset)
		}
		byDataset[q.Dataset] = append(byDataset[q.Dataset], i)
	}
	folds := make([][]int, k)
	for _, name := range names {
		idx := byDataset[name]
		if len(idx) < k {
			return nil, fmt.Errorf("folds: %s has %d queries, fewer than %d folds", name, len(idx), k)
		}
		rng := rand.New(rand.NewPCG(seed, uint64(len(idx))))
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for j, qi := range idx {
			folds[j%k] = append(folds[j%k], qi)
		}
	}
	for _, f := range folds {
		slices.Sort(f)
	}
	return folds, nil
}

// Split returns the training and test queries of fold f.
func Split(qs []*TuneQuery, folds [][]int, f int) (train, test []*TuneQuery) {
	inTest := make(map[int]bool, len(folds[f]))
	for _, i := range folds[f] {
		inTest[i] = true
	}
	for i, q := range qs {
		if inTest[i] {
			test = append(test, q)
		} else {
			train = append(train, q)
		}
	}
	return train, test
}
