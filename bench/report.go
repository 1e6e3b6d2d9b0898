package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/h4r/h4r"
)

// WriteJSON writes v to path, indented, creating the folder.
func WriteJSON(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", path, err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WritePerQuery writes one JSON line per query.
func WritePerQuery(path string, per []QueryResult) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	enc := json.NewEncoder(f)
	for _, q := range per {
		if err := enc.Encode(q); err != nil {
			f.Close()
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return f.Close()
}

// WeightsMap spells weights as their JSON keys.
func WeightsMap(w h4r.Weights) map[string]float64 {
	m := make(map[string]float64, h4r.NumSignals)
	for s := h4r.Signal(0); s < h4r.NumSignals; s++ {
		m[s.String()] = w[s]
	}
	return m
}

func metricsRow(m Metrics) string {
	return fmt.Sprintf("%.3f | %.3f | %.3f | %.3f", m.NDCG10, m.MRR10, m.Recall10, m.Recall100)
}

// QualityMarkdown writes the quality reports as one table, then a table
// per dataset with query categories.
func QualityMarkdown(w io.Writer, reps []*QualityReport) {
	fmt.Fprintln(w, "| dataset | store | weights | conversation | queries | nDCG@10 | MRR@10 | Recall@10 | Recall@100 |")
	fmt.Fprintln(w, "|---|---|---|---|---:|---:|---:|---:|---:|")
	for _, r := range reps {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s |\n", r.Dataset, r.Store, weightsLabel(r.Weights), onOff(r.Conversation), r.Queries, metricsRow(r.Overall))
	}
	for _, r := range reps {
		if len(r.Groups) == 0 {
			continue
		}
		name := r.Dataset
		if r.Setup != "" {
			name += " (" + r.Setup + ")"
		}
		fmt.Fprintf(w, "\n%s by query category:\n\n", name)
		fmt.Fprintln(w, "| category | queries | nDCG@10 | MRR@10 | Recall@10 | Recall@100 |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, g := range r.Groups {
			fmt.Fprintf(w, "| %s | %d | %s |\n", g.Group, g.Queries, metricsRow(g.Metrics))
		}
	}
}

// weightsLabel names a weight setting briefly: "relevance" for
// relevance-only, else the non-zero weights.
func weightsLabel(w map[string]float64) string {
	var parts []string
	for s := h4r.Signal(0); s < h4r.NumSignals; s++ {
		if v := w[s.String()]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", s.String()[:3], v))
		}
	}
	if len(parts) == 1 && strings.HasPrefix(parts[0], "rel") {
		return "relevance only"
	}
	return strings.Join(parts, ", ")
}

// TuneMarkdown writes the tuning report: held-out comparison, folds, the
// final weights.
func TuneMarkdown(w io.Writer, r *TuneReport) {
	fmt.Fprintf(w, "Held-out nDCG@10 (%d-fold cross-validation over queries, seed %d; every query scored by weights tuned without it):\n\n", r.Folds, r.Seed)
	var names []string
	if len(r.HeldOut) > 0 {
		for n := range r.HeldOut[0].Baselines {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	fmt.Fprintf(w, "| dataset | queries | tuned |")
	for _, n := range names {
		fmt.Fprintf(w, " %s |", n)
	}
	for _, n := range names {
		fmt.Fprintf(w, " gain vs %s |", n)
	}
	fmt.Fprintf(w, " folds beating relevance-only |\n|---|---:|---:|")
	for range 2 * len(names) {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w, "---:|")
	for _, c := range r.HeldOut {
		fmt.Fprintf(w, "| %s | %d | %.3f |", c.Dataset, c.Queries, c.Tuned.NDCG10)
		for _, n := range names {
			fmt.Fprintf(w, " %.3f |", c.Baselines[n].NDCG10)
		}
		for _, n := range names {
			fmt.Fprintf(w, " %+.3f |", c.GainNDCG10[n])
		}
		fmt.Fprintf(w, " %d/%d |\n", c.FoldsBeatRelevance, r.Folds)
	}
	for _, c := range r.HeldOut {
		if len(c.Categories) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s held-out nDCG@10 by query category:\n\n| category | queries | tuned | relevance-only | gain |\n|---|---:|---:|---:|---:|\n", c.Dataset)
		for _, g := range c.Categories {
			fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %+.3f |\n", g.Category, g.Queries, g.Tuned, g.RelevanceOnly, g.Tuned-g.RelevanceOnly)
		}
	}
	fmt.Fprintln(w, "\nPer fold (train → held-out nDCG@10 per dataset, and the fold's weights):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| fold | dataset | train | held-out | weights (rel rec fre imp cau nov tru sen) | λ |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---|---:|")
	for _, f := range r.PerFold {
		for _, d := range r.Datasets {
			fmt.Fprintf(w, "| %d | %s | %.3f | %.3f | %s | %g |\n", f.Fold, d, f.Train[d].NDCG10, f.Test[d].NDCG10, weightsVector(f.Params.Weights), f.Params.Lambda)
		}
	}
	fmt.Fprintf(w, "\nFinal weights (tuned on all queries): %s, λ = %g\n", weightsVector(r.Final.Weights), r.Final.Lambda)
}

func weightsVector(w h4r.Weights) string {
	parts := make([]string, len(w))
	for i, v := range w {
		parts[i] = fmt.Sprintf("%.3f", v)
	}
	return strings.Join(parts, " ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ComparisonMarkdown writes, for every dataset run both as relevance-only
// BM25 (Setup "bm25") and otherwise, nDCG@10 and Recall@10 of both and
// their difference, overall and by query category.
func ComparisonMarkdown(w io.Writer, reps []*QualityReport) {
	fmt.Fprintln(w, "Against relevance-only BM25 (conversation off), same run:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| dataset | category | queries | nDCG@10 BM25 | nDCG@10 | Δ | Recall@10 BM25 | Recall@10 | Δ |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for i, base := range reps {
		if base.Setup != "bm25" || i+1 >= len(reps) || reps[i+1].Dataset != base.Dataset {
			continue
		}
		r := reps[i+1]
		row := func(cat string, n int, b, t Metrics) {
			fmt.Fprintf(w, "| %s | %s | %d | %.3f | %.3f | %+.3f | %.3f | %.3f | %+.3f |\n", base.Dataset, cat, n,
				b.NDCG10, t.NDCG10, t.NDCG10-b.NDCG10, b.Recall10, t.Recall10, t.Recall10-b.Recall10)
		}
		row("all", r.Queries, base.Overall, r.Overall)
		for _, g := range r.Groups {
			for _, bg := range base.Groups {
				if bg.Group == g.Group {
					row(g.Group, g.Queries, bg.Metrics, g.Metrics)
				}
			}
		}
	}
}
