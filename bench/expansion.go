package bench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/h4r/h4r/analysis"
)

// ExpansionSchema names the version of the expansion report's JSON shape.
const ExpansionSchema = "h4r.bench.expansion/v1"

// ExpansionSetting is one setting of pseudo-relevance feedback a
// cross-validation chooses among: off, or on with its parameters.
type ExpansionSetting struct {
	Name   string             `json:"name"`
	On     bool               `json:"on"`
	Params analysis.Expansion `json:"params"`
}

// ExpansionGrid returns off and every combination of the given feedback
// documents, added words, original weights, first-pass shares, spreads
// and term selections (contrast or not).
func ExpansionGrid(docs, terms []int, original, firstPass, spread []float64, contrast []bool) []ExpansionSetting {
	grid := []ExpansionSetting{{Name: "off"}}
	for _, d := range docs {
		for _, t := range terms {
			for _, w := range original {
				for _, f := range firstPass {
					for _, sp := range spread {
						for _, c := range contrast {
							p := analysis.Expansion{Docs: d, Terms: t, OriginalWeight: w, FirstPass: f, Spread: sp, Contrast: c}
							grid = append(grid, ExpansionSetting{Name: fmt.Sprintf("k=%d terms=%d λ=%.2f first=%.2f spread=%.2f contrast=%v", d, t, w, f, sp, c), On: true, Params: p})
						}
					}
				}
			}
		}
	}
	return grid
}

// ExpansionQuery is one judged query's nDCG@10 under every setting of a
// grid, in the grid's order.
type ExpansionQuery struct {
	Dataset string    `json:"dataset"`
	ID      string    `json:"id"`
	NDCG10  []float64 `json:"ndcg@10"`
}

// ExpansionFold is what one fold chose on its training queries.
type ExpansionFold struct {
	Fold    int                `json:"fold"`
	Chosen  string             `json:"chosen"`
	Train   map[string]float64 `json:"trainNdcg@10"` // per dataset
	Test    map[string]float64 `json:"testNdcg@10"`  // per dataset, held out
	TestOff map[string]float64 `json:"testOffNdcg@10"`
}

// ExpansionHeldOut is one dataset's held-out nDCG@10: each query scored
// under the setting chosen without it, beside expansion off on the same
// queries.
type ExpansionHeldOut struct {
	Dataset string  `json:"dataset"`
	Queries int     `json:"queries"`
	Chosen  float64 `json:"chosenNdcg@10"`
	Off     float64 `json:"offNdcg@10"`
}

// ExpansionReport is the result of h4r bench expansion.
type ExpansionReport struct {
	Schema    string             `json:"schema"`
	Datasets  []string           `json:"datasets"`
	Store     string             `json:"store"`
	Objective string             `json:"objective"`
	Folds     int                `json:"k"`
	Seed      uint64             `json:"seed"`
	Settings  []ExpansionSetting `json:"settings"`
	PerFold   []ExpansionFold    `json:"folds"`
	HeldOut   []ExpansionHeldOut `json:"heldOut"`
	// Final is the setting chosen on every query (the default to ship);
	// InSample its figures on those same queries, which are not a measure
	// of what it will do on others.
	Final    ExpansionSetting   `json:"final"`
	InSample map[string]float64 `json:"finalInSampleNdcg@10"`
	// Asked is the same cross-validation among the settings that expand,
	// without the rule that nothing may lose: the parameters a request
	// that asks for expansion gets.
	AskedPerFold  []ExpansionFold    `json:"askedFolds"`
	AskedHeldOut  []ExpansionHeldOut `json:"askedHeldOut"`
	Asked         ExpansionSetting   `json:"asked"`
	AskedInSample map[string]float64 `json:"askedInSampleNdcg@10"`
	// Table is every setting's mean nDCG@10 per dataset on all queries.
	Table map[string]map[string]float64 `json:"table"`
	// Queries are every query's figures, for analyses the report does not
	// make itself.
	Queries []ExpansionQuery `json:"queries"`
	Command string           `json:"command"`
	Seconds float64          `json:"seconds"`
}

// CrossValidateExpansion chooses, k times, the setting that does best on
// k−1 folds (the mean over datasets of mean nDCG@10, among the settings
// whose training mean is at or above off's on every dataset: a default
// must not lose anywhere), and scores it on the held-out fold; then
// chooses once more on every query for the final setting.
func CrossValidateExpansion(settings []ExpansionSetting, qs []ExpansionQuery, k int, seed uint64) (*ExpansionReport, error) {
	if len(settings) == 0 || settings[0].On {
		return nil, fmt.Errorf("expansion cross-validation: the first setting must be off")
	}
	for _, q := range qs {
		if len(q.NDCG10) != len(settings) {
			return nil, fmt.Errorf("expansion cross-validation: query %s/%s has %d scores for %d settings", q.Dataset, q.ID, len(q.NDCG10), len(settings))
		}
	}
	tq := make([]*TuneQuery, len(qs))
	for i, q := range qs {
		tq[i] = &TuneQuery{Dataset: q.Dataset, ID: q.ID}
	}
	folds, err := Folds(tq, k, seed)
	if err != nil {
		return nil, err
	}
	rep := &ExpansionReport{Schema: ExpansionSchema, Folds: k, Seed: seed, Settings: settings,
		Objective: "mean over datasets of mean nDCG@10, among settings at or above off on every dataset"}
	for _, q := range qs {
		if !slices.Contains(rep.Datasets, q.Dataset) {
			rep.Datasets = append(rep.Datasets, q.Dataset)
		}
	}
	rep.PerFold, rep.HeldOut, rep.Final, rep.InSample = crossValidate(settings, qs, folds, rep.Datasets, chooseExpansion)
	rep.AskedPerFold, rep.AskedHeldOut, rep.Asked, rep.AskedInSample = crossValidate(settings, qs, folds, rep.Datasets, chooseAsked)
	rep.Queries = qs
	rep.Table = map[string]map[string]float64{}
	for s := range settings {
		rep.Table[settings[s].Name] = datasetMeans(qs, s)
	}
	return rep, nil
}

// crossValidate chooses with choose on k−1 folds and scores the held-out
// fold, k times, then chooses on every query.
func crossValidate(settings []ExpansionSetting, qs []ExpansionQuery, folds [][]int, datasets []string, choose func([]ExpansionQuery, int) int) ([]ExpansionFold, []ExpansionHeldOut, ExpansionSetting, map[string]float64) {
	var perFold []ExpansionFold
	chosenFor := make([]int, len(qs))
	for f := range folds {
		test := map[int]bool{}
		for _, i := range folds[f] {
			test[i] = true
		}
		var train, held []ExpansionQuery
		for i, q := range qs {
			if test[i] {
				held = append(held, q)
			} else {
				train = append(train, q)
			}
		}
		best := choose(train, len(settings))
		for _, i := range folds[f] {
			chosenFor[i] = best
		}
		perFold = append(perFold, ExpansionFold{Fold: f + 1, Chosen: settings[best].Name,
			Train: datasetMeans(train, best), Test: datasetMeans(held, best), TestOff: datasetMeans(held, 0)})
	}
	var heldOut []ExpansionHeldOut
	for _, name := range datasets {
		h := ExpansionHeldOut{Dataset: name}
		for i, q := range qs {
			if q.Dataset == name {
				h.Queries++
				h.Chosen += q.NDCG10[chosenFor[i]]
				h.Off += q.NDCG10[0]
			}
		}
		h.Chosen /= float64(h.Queries)
		h.Off /= float64(h.Queries)
		heldOut = append(heldOut, h)
	}
	final := choose(qs, len(settings))
	return perFold, heldOut, settings[final], datasetMeans(qs, final)
}

// chooseAsked returns the setting other than off with the best objective
// on qs: the parameters a request that asks for expansion gets, where
// losing on some collection is the caller's choice. Ties go to the
// earlier setting; with no setting but off, off.
func chooseAsked(qs []ExpansionQuery, n int) int {
	best, bestObj := 0, math.Inf(-1)
	for s := 1; s < n; s++ {
		if obj := meanOfMeans(datasetMeans(qs, s)); obj > bestObj+1e-12 {
			best, bestObj = s, obj
		}
	}
	return best
}

// chooseExpansion returns the setting with the best objective on qs among
// those at or above off (setting 0) on every dataset; off when none is.
// Ties go to the earlier setting.
func chooseExpansion(qs []ExpansionQuery, n int) int {
	off := datasetMeans(qs, 0)
	best, bestObj := 0, meanOfMeans(off)
	for s := 1; s < n; s++ {
		m := datasetMeans(qs, s)
		feasible := true
		for name, v := range m {
			if v < off[name] {
				feasible = false
			}
		}
		if obj := meanOfMeans(m); feasible && obj > bestObj+1e-12 {
			best, bestObj = s, obj
		}
	}
	return best
}

// datasetMeans is each dataset's mean nDCG@10 under setting s.
func datasetMeans(qs []ExpansionQuery, s int) map[string]float64 {
	sum, n := map[string]float64{}, map[string]int{}
	for _, q := range qs {
		sum[q.Dataset] += q.NDCG10[s]
		n[q.Dataset]++
	}
	for name := range sum {
		sum[name] /= float64(n[name])
	}
	return sum
}

// meanOfMeans is the mean over datasets of their means.
func meanOfMeans(means map[string]float64) float64 {
	if len(means) == 0 {
		return 0
	}
	var sum float64
	for _, v := range means {
		sum += v
	}
	return sum / float64(len(means))
}

// ExpansionMarkdown writes the report as Markdown: held-out figures first,
// then what each fold chose, then the whole grid on all queries.
func ExpansionMarkdown(w io.Writer, r *ExpansionReport) {
	fmt.Fprintf(w, "Pseudo-relevance feedback, %d-fold cross-validation (seed %d), store %s.\n\n", r.Folds, r.Seed, r.Store)
	fmt.Fprintf(w, "Objective: %s.\n\n", r.Objective)
	fmt.Fprintf(w, "| dataset | queries | held-out nDCG@10, chosen | off | gain |\n|---|---:|---:|---:|---:|\n")
	for _, h := range r.HeldOut {
		fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %+.3f |\n", h.Dataset, h.Queries, h.Chosen, h.Off, h.Chosen-h.Off)
	}
	fmt.Fprintf(w, "\n| fold | chosen on the other folds |\n|---:|---|\n")
	for _, f := range r.PerFold {
		fmt.Fprintf(w, "| %d | %s |\n", f.Fold, f.Chosen)
	}
	fmt.Fprintf(w, "\nChosen on every query (the default to ship): **%s**.\n\n", r.Final.Name)
	fmt.Fprintf(w, "Among the settings that expand, without the rule that nothing may lose (the parameters a request that asks for expansion gets):\n\n")
	fmt.Fprintf(w, "| dataset | queries | held-out nDCG@10, chosen | off | gain |\n|---|---:|---:|---:|---:|\n")
	for _, h := range r.AskedHeldOut {
		fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %+.3f |\n", h.Dataset, h.Queries, h.Chosen, h.Off, h.Chosen-h.Off)
	}
	fmt.Fprintf(w, "\n| fold | chosen on the other folds |\n|---:|---|\n")
	for _, f := range r.AskedPerFold {
		fmt.Fprintf(w, "| %d | %s |\n", f.Fold, f.Chosen)
	}
	fmt.Fprintf(w, "\nChosen on every query: **%s**.\n\n", r.Asked.Name)
	fmt.Fprintf(w, "Every setting on all queries (in-sample, mean nDCG@10):\n\n| setting | %s |\n|---|%s\n", strings.Join(r.Datasets, " | "), strings.Repeat("---:|", len(r.Datasets)))
	for _, s := range r.Settings {
		fmt.Fprintf(w, "| %s |", s.Name)
		for _, d := range r.Datasets {
			fmt.Fprintf(w, " %.3f |", r.Table[s.Name][d])
		}
		fmt.Fprintln(w)
	}
}
