package bench

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/h4r/h4r"
)

// TuneSchema names the version of the tuning report's JSON shape.
const TuneSchema = "h4r.bench.tune/v1"

// FoldResult is one fold of cross-validation: the parameters tuned on its
// training queries and their metrics on training and held-out queries.
type FoldResult struct {
	Fold         int                `json:"fold"`
	TrainQueries int                `json:"trainQueries"`
	TestQueries  int                `json:"testQueries"`
	Params       Params             `json:"params"`
	Train        map[string]Metrics `json:"train"` // per dataset
	Test         map[string]Metrics `json:"test"`  // per dataset, held out
}

// Baseline is a fixed setting the tuned one is compared with.
type Baseline struct {
	Name   string `json:"name"`
	Params Params `json:"params"`
}

// DatasetComparison holds the held-out metrics of one dataset: every query
// scored under the parameters tuned without it (pooled over folds), beside
// the fixed baselines on the same queries.
type DatasetComparison struct {
	Dataset   string             `json:"dataset"`
	Queries   int                `json:"queries"`
	Tuned     Metrics            `json:"tuned"`
	Baselines map[string]Metrics `json:"baselines"`
	// GainNDCG10 is tuned − baseline nDCG@10, per baseline.
	GainNDCG10 map[string]float64 `json:"gainNdcg@10"`
	// FoldsBeatRelevance counts folds whose held-out nDCG@10 beats
	// relevance-only on this dataset.
	FoldsBeatRelevance int `json:"foldsBeatRelevanceOnly"`
	// Categories breaks the held-out comparison down by query category
	// (the synthetic set's one-signal categories), when there are any.
	Categories []CategoryComparison `json:"categories,omitempty"`
}

// CategoryComparison is the held-out nDCG@10 of one query category, tuned
// and relevance-only.
type CategoryComparison struct {
	Category      string  `json:"category"`
	Queries       int     `json:"queries"`
	Tuned         float64 `json:"tunedNdcg@10"`
	RelevanceOnly float64 `json:"relevanceOnlyNdcg@10"`
}

// SweepPoint is the objective on all queries with one parameter moved.
type SweepPoint struct {
	Param     string  `json:"param"`
	Value     float64 `json:"value"`
	Objective float64 `json:"objective"`
}

// TuneReport is the result of h4r bench tune.
type TuneReport struct {
	Schema    string              `json:"schema"`
	Datasets  []string            `json:"datasets"`
	Store     string              `json:"store"`
	Objective string              `json:"objective"` // what was maximised
	Folds     int                 `json:"k"`
	Seed      uint64              `json:"seed"`
	Restarts  int                 `json:"restarts"`
	PerFold   []FoldResult        `json:"folds"`
	HeldOut   []DatasetComparison `json:"heldOut"`
	Final     Params              `json:"final"` // tuned on all queries: the weights file
	FinalAll  map[string]Metrics  `json:"finalOnAllQueries"`
	Path      []Step              `json:"path"`  // the final fit's accepted moves
	Sweep     []SweepPoint        `json:"sweep"` // the objective around Final, one parameter at a time
	Command   string              `json:"command"`
	Seconds   float64             `json:"seconds"`
}

// CrossValidate tunes on k−1 folds and scores the held-out fold, k times;
// then tunes once more on every query for the final parameters, and sweeps
// each parameter around them for the charts.
func CrossValidate(ctx context.Context, qs []*TuneQuery, k int, t *Tuner, baselines []Baseline, progress io.Writer) (*TuneReport, error) {
	folds, err := Folds(qs, k, t.Seed)
	if err != nil {
		return nil, err
	}
	rep := &TuneReport{Schema: TuneSchema, Objective: "mean over datasets of mean nDCG@10", Folds: k, Seed: t.Seed, Restarts: t.Restarts}
	for _, q := range qs {
		if !slices.Contains(rep.Datasets, q.Dataset) {
			rep.Datasets = append(rep.Datasets, q.Dataset)
		}
	}
	heldOutParams := make([]Params, len(qs)) // the parameters each query was scored under
	p := newProgress(progress, "tuning", k+1)
	p.add(0) // draw the bar before the first fold, which takes a while
	for f := range folds {
		train, test := Split(qs, folds, f)
		params, _, _, err := t.Fit(ctx, train)
		if err != nil {
			return nil, fmt.Errorf("fold %d: %w", f+1, err)
		}
		_, trainM := MeanMetrics(train, params)
		_, testM := MeanMetrics(test, params)
		rep.PerFold = append(rep.PerFold, FoldResult{Fold: f + 1, TrainQueries: len(train), TestQueries: len(test), Params: params, Train: trainM, Test: testM})
		for _, i := range folds[f] {
			heldOutParams[i] = params
		}
		p.add(1)
	}
	rep.HeldOut = compare(qs, folds, heldOutParams, baselines, rep.Datasets)

	final, _, path, err := t.Fit(ctx, qs)
	if err != nil {
		return nil, fmt.Errorf("final fit: %w", err)
	}
	p.add(1)
	p.finish()
	rep.Final, rep.Path = final, path
	_, rep.FinalAll = MeanMetrics(qs, final)
	rep.Sweep = sweep(qs, final, t)
	return rep, nil
}

// compare pools the held-out scores per dataset.
func compare(qs []*TuneQuery, folds [][]int, heldOut []Params, baselines []Baseline, datasets []string) []DatasetComparison {
	out := make([]DatasetComparison, 0, len(datasets))
	for _, name := range datasets {
		c := DatasetComparison{Dataset: name, Baselines: map[string]Metrics{}, GainNDCG10: map[string]float64{}}
		var tuned Metrics
		base := make([]Metrics, len(baselines))
		for i, q := range qs {
			if q.Dataset != name {
				continue
			}
			c.Queries++
			tuned.add(Score(heldOut[i].Rank(q, 100), q.Judged))
			for b, bl := range baselines {
				base[b].add(Score(bl.Params.Rank(q, 100), q.Judged))
			}
		}
		n := 1 / float64(max(c.Queries, 1))
		c.Tuned = tuned.scale(n)
		for b, bl := range baselines {
			c.Baselines[bl.Name] = base[b].scale(n)
			c.GainNDCG10[bl.Name] = c.Tuned.NDCG10 - c.Baselines[bl.Name].NDCG10
		}
		c.Categories = categories(qs, name, heldOut)
		for f := range folds {
			var tunedSum, relSum float64
			count := 0
			for _, i := range folds[f] {
				q := qs[i]
				if q.Dataset != name {
					continue
				}
				count++
				tunedSum += NDCG(heldOut[i].Rank(q, 10), q.Judged, 10)
				relSum += NDCG(Params{Weights: RelevanceOnly()}.Rank(q, 10), q.Judged, 10)
			}
			if count > 0 && tunedSum > relSum+1e-12 {
				c.FoldsBeatRelevance++
			}
		}
		out = append(out, c)
	}
	return out
}

// categories pools held-out nDCG@10 per query category of one dataset.
func categories(qs []*TuneQuery, dataset string, heldOut []Params) []CategoryComparison {
	byName := map[string]*CategoryComparison{}
	var names []string
	rel := Params{Weights: RelevanceOnly()}
	for i, q := range qs {
		if q.Dataset != dataset || q.Category == "" {
			continue
		}
		c := byName[q.Category]
		if c == nil {
			c = &CategoryComparison{Category: q.Category}
			byName[q.Category] = c
			names = append(names, q.Category)
		}
		c.Queries++
		c.Tuned += NDCG(heldOut[i].Rank(q, 10), q.Judged, 10)
		c.RelevanceOnly += NDCG(rel.Rank(q, 10), q.Judged, 10)
	}
	slices.Sort(names)
	out := make([]CategoryComparison, 0, len(names))
	for _, n := range names {
		c := *byName[n]
		c.Tuned /= float64(c.Queries)
		c.RelevanceOnly /= float64(c.Queries)
		out = append(out, c)
	}
	return out
}

// sweep moves one parameter at a time over its grid around p.
func sweep(qs []*TuneQuery, p Params, t *Tuner) []SweepPoint {
	// nil floors: the sweep shows the plain objective, nDCG@10.
	var pts []SweepPoint
	for s := h4r.Signal(0); s < h4r.NumSignals; s++ {
		var cands []Params
		for _, v := range t.Grid {
			q := p
			q.Weights[s] = v
			if q.Weights.Sum() > 0 {
				cands = append(cands, q)
			}
		}
		for i, sc := range t.scoreAll(qs, nil, cands) {
			pts = append(pts, SweepPoint{Param: s.String(), Value: cands[i].Weights[s], Objective: sc})
		}
	}
	var cands []Params
	for _, v := range t.LambdaGrid {
		q := p
		q.Lambda = v
		cands = append(cands, q)
	}
	for i, sc := range t.scoreAll(qs, nil, cands) {
		pts = append(pts, SweepPoint{Param: "lambda", Value: cands[i].Lambda, Objective: sc})
	}
	return pts
}
