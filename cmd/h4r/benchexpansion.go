package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/config"
)

// cmdBenchExpansion runs every dataset's queries under each setting of a
// grid of pseudo-relevance feedback parameters, on one loaded store per
// dataset, and chooses the default by k-fold cross-validation.
func cmdBenchExpansion(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	if err := cfg.ApplyWeightsFile(); err != nil {
		return err
	}
	fs := flag.NewFlagSet("bench expansion", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `bench expansion --dataset DIR [--dataset DIR ...] [flags]`)
	var c benchCommon
	c.register(fs)
	docs := fs.String("docs", "5,10,20", "feedback documents to try (ascending)")
	terms := fs.String("terms", "10,20", "added words to try (ascending)")
	original := fs.String("original", "0.5,0.7", "original query weights (λ) to try")
	firstPass := fs.String("first-pass", "0,0.5", "first-pass score shares to try")
	spread := fs.String("spread", "0,2", "spreads to try (best over k-th first-pass score at which a query is left unexpanded; 0: never)")
	contrast := fs.String("contrast", "false,true", "term selections to try: false (RM3's most probable words), true (KL contrast with the whole first pass)")
	k := fs.Int("k", 5, "folds of cross-validation over queries")
	seed := fs.Uint64("seed", 1, "seed of the folds")
	weights := fs.String("weights", "config", "weights: config (H4R_WEIGHT_*, H4R_WEIGHTS_FILE), relevance, seed, or a weights file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(c.datasets) == 0 {
		return usageError{"bench expansion: --dataset DIR is required"}
	}
	d, err := parseInts(*docs)
	if err != nil {
		return usageError{"--docs: " + err.Error()}
	}
	t, err := parseInts(*terms)
	if err != nil {
		return usageError{"--terms: " + err.Error()}
	}
	o, err := parseShares(*original)
	if err != nil {
		return usageError{"--original: " + err.Error()}
	}
	fp, err := parseShares(*firstPass)
	if err != nil {
		return usageError{"--first-pass: " + err.Error()}
	}
	sp, err := parseNumbers(*spread)
	if err != nil {
		return usageError{"--spread: " + err.Error()}
	}
	var cs []bool
	for _, f := range strings.Split(*contrast, ",") {
		b, err := strconv.ParseBool(strings.TrimSpace(f))
		if err != nil {
			return usageError{fmt.Sprintf("--contrast: %q is not true or false", f)}
		}
		cs = append(cs, b)
	}
	w, lambda, err := parseWeights(*weights, cfg)
	if err != nil {
		return err
	}
	cfg.RecencyDecayLambda = lambda
	cfg.WeightsFile = ""
	grid := bench.ExpansionGrid(d, t, o, fp, sp, cs)
	start := time.Now()
	var qs []bench.ExpansionQuery
	for _, dir := range c.datasets {
		got, err := expansionScores(ctx, cfg, dir, &c, grid, stderr, bench.WithWeights(w))
		if err != nil {
			return err
		}
		qs = append(qs, got...)
	}
	rep, err := bench.CrossValidateExpansion(grid, qs, *k, *seed)
	if err != nil {
		return err
	}
	rep.Store = storeName(cfg)
	rep.Command = "h4r bench " + strings.Join(append([]string{"expansion"}, args...), " ")
	rep.Seconds = time.Since(start).Seconds()
	if err := bench.WriteJSON(filepath.Join(c.out, "expansion.json"), rep); err != nil {
		return err
	}
	var md strings.Builder
	bench.ExpansionMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(c.out, "expansion.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("writing the Markdown report: %w", err)
	}
	fmt.Fprint(stdout, md.String())
	fmt.Fprintf(stdout, "\nreports in %s (expansion.json, expansion.md)\n", c.out)
	return nil
}

// expansionScores loads one dataset into a fresh store and scores each of
// its queries under every setting of grid.
func expansionScores(ctx context.Context, cfg config.Config, dir string, c *benchCommon, grid []bench.ExpansionSetting, stderr io.Writer, extra ...bench.RunOption) ([]bench.ExpansionQuery, error) {
	ds, err := bench.LoadBEIR(dir, c.split)
	if err != nil {
		return nil, err
	}
	cfg.GeneratorTimeout, cfg.RequestTimeout = c.timeout, c.timeout
	cleanup, err := freshStore(&cfg, ds.Name)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	opts := append(c.runOptions(cfg, stderr), extra...)
	a, err := bench.OpenLoaded(ctx, cfg, ds, opts...)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	qs := make([]bench.ExpansionQuery, len(ds.Queries))
	for s, set := range grid {
		runs, err := bench.Run(ctx, a, ds, append(opts, bench.WithExpansion(set.On, set.Params))...)
		if err != nil {
			return nil, fmt.Errorf("%s under %s: %w", ds.Name, set.Name, err)
		}
		_, _, per := bench.Evaluate(ds, runs)
		for i, r := range per {
			if s == 0 {
				qs[i] = bench.ExpansionQuery{Dataset: ds.Name, ID: r.ID, NDCG10: make([]float64, len(grid))}
			}
			qs[i].NDCG10[s] = r.Metrics.NDCG10
		}
	}
	return qs, nil
}

// parseShares reads a comma-separated list of numbers in [0, 1).
func parseShares(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 || v >= 1 {
			return nil, fmt.Errorf("%q is not a number in [0, 1)", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// parseNumbers reads a comma-separated list of numbers >= 0.
func parseNumbers(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%q is not a finite number >= 0", f)
		}
		out = append(out, v)
	}
	return out, nil
}
