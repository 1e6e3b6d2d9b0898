package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/bench"
	"github.com/h4r/h4r/config"
)

const benchUsage = `Usage:
  h4r bench quality --dataset DIR [--dataset DIR …] [--weights config|relevance|seed|FILE] [--conversation config|on|off] [--against-bm25] [--out DIR]
  h4r bench tune    --dataset DIR [--dataset DIR …] [--from-feedback] [--k 5] [--seed 1] [--restarts 4] [--out DIR]
  h4r bench expansion --dataset DIR [--dataset DIR …] [--docs 5,10,20] [--terms 10,20] [--original 0.5,0.7] [--first-pass 0,0.5] [--spread 0,2] [--contrast false,true] [--k 5] [--out DIR]
  h4r bench gen     --out DIR [--seed 1] [--queries 30] [--kind memory|conversation [--hard]]
  h4r bench latency [--sizes 1000,10000,100000,1000000] [--requests 200] [--concurrency 1,16,100] [--out DIR]
  h4r bench latency --api [--data bench-data | --url URL] [--sizes 10000,100000] [--concurrency 1,16,100] [--out DIR]

Datasets are BEIR folders (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv) with an optional
h4r-mapping.json. Each run loads them into a fresh store: the embedded one in a temporary
folder, or Postgres when DATABASE_URL is set (it must name an empty database).
`

// cmdBench dispatches h4r bench SUBCOMMAND.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, benchUsage)
		return usageError{"bench: missing subcommand (quality, tune, expansion, gen or latency)"}
	}
	switch args[0] {
	case "quality":
		return cmdBenchQuality(ctx, args[1:], stdout, stderr, lookupEnv)
	case "tune":
		return cmdBenchTune(ctx, args[1:], stdout, stderr, lookupEnv)
	case "expansion":
		return cmdBenchExpansion(ctx, args[1:], stdout, stderr, lookupEnv)
	case "gen":
		return cmdBenchGen(ctx, args[1:], stdout, stderr)
	case "latency":
		return cmdBenchLatency(ctx, args[1:], stdout, stderr, lookupEnv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, benchUsage)
		return nil
	}
	fmt.Fprint(stderr, benchUsage)
	return usageError{fmt.Sprintf("bench: unknown subcommand %q", args[0])}
}

// listFlag collects a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// benchCommon are the flags quality and tune share.
type benchCommon struct {
	datasets listFlag
	split    string
	out      string
	qtype    string
	workers  int
	verbose  bool
	timeout  time.Duration
	maxHops  int
	http     bool
}

func (c *benchCommon) register(fs *flag.FlagSet) {
	fs.Var(&c.datasets, "dataset", "BEIR dataset folder (repeatable)")
	fs.StringVar(&c.split, "split", "test", "qrels split: qrels/SPLIT.tsv")
	fs.StringVar(&c.out, "out", "bench-out", "folder of the reports")
	fs.StringVar(&c.qtype, "type", string(h4r.DefaultQueryType), "query type of the requests: hybrid (full-text and vectors, the service's default), keyword (full-text only), semantic")
	fs.IntVar(&c.workers, "workers", 2, "queries in flight")
	fs.BoolVar(&c.verbose, "v", false, "log the service's warnings")
	fs.IntVar(&c.maxHops, "max-hops", 0, "causal hops from the anchors per request (0: H4R_MAX_HOPS)")
	fs.BoolVar(&c.http, "http", false, "ask the queries through the HTTP API (POST /v1/context-pack on a loopback server over the loaded store, anonymous audit on) instead of calling the engine in process")
	fs.DurationVar(&c.timeout, "generator-timeout", time.Minute, "deadline of each generator and request: long, so that a loaded machine does not change what is measured")
}

func (c *benchCommon) runOptions(cfg config.Config, stderr io.Writer) []bench.RunOption {
	opts := []bench.RunOption{bench.WithProgress(stderr), bench.WithWorkers(c.workers), bench.WithQueryType(h4r.QueryType(c.qtype)), bench.WithMaxHops(c.maxHops)}
	if c.verbose {
		opts = append(opts, bench.WithLogger(cfg.Logger(stderr)))
	}
	return opts
}

// freshStore points cfg at a new, empty store and returns the function that
// removes it: a temporary folder for the embedded store, or, when
// DATABASE_URL is set, a new database on that server (dropped afterwards),
// so that a benchmark never mixes its items with anything else.
func freshStore(cfg *config.Config, name string) (func(), error) {
	if cfg.DatabaseURL != "" {
		return freshPostgres(cfg, name)
	}
	dir, err := os.MkdirTemp("", "h4r-bench-"+name+"-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary store: %w", err)
	}
	cfg.DataDir = dir
	return func() { os.RemoveAll(dir) }, nil
}

// freshPostgres creates database h4r_bench_NAME_NANOS on DATABASE_URL's
// server and points cfg at it.
func freshPostgres(cfg *config.Config, name string) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("DATABASE_URL: the benchmark needs a postgres:// URL to create its own database on that server")
	}
	conn, err := pgx.Connect(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: connecting to create a benchmark database: %w", err)
	}
	defer conn.Close(ctx)
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(name))
	db := fmt.Sprintf("h4r_bench_%s_%d", clean, time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		return nil, fmt.Errorf("DATABASE_URL: creating database %s: %w", db, err)
	}
	admin := cfg.DatabaseURL
	u.Path = "/" + db
	cfg.DatabaseURL = u.String()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
	}, nil
}

func storeName(cfg config.Config) string {
	if cfg.DatabaseURL != "" {
		return "postgres"
	}
	return "sqlite"
}

// parseWeights reads --weights: config (what the service is configured
// with), relevance, seed, or a weights file.
func parseWeights(v string, cfg config.Config) (h4r.Weights, float64, error) {
	switch v {
	case "config":
		return cfg.Weights, cfg.RecencyDecayLambda, nil
	case "relevance":
		return bench.RelevanceOnly(), cfg.RecencyDecayLambda, nil
	case "seed":
		return bench.SeedWeights(), cfg.RecencyDecayLambda, nil
	}
	wf, err := config.ReadWeightsFile(v)
	if err != nil {
		return h4r.Weights{}, 0, fmt.Errorf("--weights: %w", err)
	}
	return wf.Weights, wf.RecencyDecayLambda, nil
}

// collect loads one dataset into a fresh store and runs its queries.
func collect(ctx context.Context, cfg config.Config, dir string, c *benchCommon, stderr io.Writer, extra ...bench.RunOption) (*bench.Dataset, []bench.QueryRun, error) {
	ds, err := bench.LoadBEIR(dir, c.split)
	if err != nil {
		return nil, nil, err
	}
	cfg.GeneratorTimeout, cfg.RequestTimeout = c.timeout, c.timeout
	cleanup, err := freshStore(&cfg, ds.Name)
	if err != nil {
		return nil, nil, err
	}
	defer cleanup()
	opts := append(c.runOptions(cfg, stderr), extra...)
	a, err := bench.OpenLoaded(ctx, cfg, ds, opts...)
	if err != nil {
		return nil, nil, err
	}
	defer a.Close()
	if c.http {
		base, stop, err := serveBench(cfg, a, cfg.Logger(io.Discard))
		if err != nil {
			return nil, nil, err
		}
		defer stop()
		opts = append(opts, bench.WithEndpoint(base, &http.Client{}))
	}
	runs, err := bench.Run(ctx, a, ds, opts...)
	if err != nil {
		return nil, nil, err
	}
	return ds, runs, nil
}

// feedbackQueries ranks, on the configured store, the query of every pack
// judged by POST /feedback, labelled by its verdict (bench.FeedbackDataset).
func feedbackQueries(ctx context.Context, cfg config.Config, c *benchCommon, stderr io.Writer) ([]*bench.TuneQuery, error) {
	cfg.GeneratorTimeout, cfg.RequestTimeout = c.timeout, c.timeout
	a, err := app.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	ds, err := bench.FeedbackDataset(ctx, a.EachFeedback, time.Now())
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "feedback: %d judged packs with a useful or partial verdict\n", len(ds.Queries))
	runs, err := bench.Run(ctx, a, ds, c.runOptions(cfg, stderr)...)
	if err != nil {
		return nil, err
	}
	return bench.NewTuneQueries(ds, runs), nil
}

func cmdBenchQuality(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	if err := cfg.ApplyWeightsFile(); err != nil {
		return err
	}
	fs := flag.NewFlagSet("bench quality", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `bench quality --dataset DIR [flags]`)
	var c benchCommon
	c.register(fs)
	weights := fs.String("weights", "config", "weights: config (H4R_WEIGHT_*, H4R_WEIGHTS_FILE), relevance, seed, or a weights file")
	deliver := fs.Bool("deliver", false, "let packs deliver items (raises access counts during the run; see bench.WithDelivery)")
	superseded := fs.String("superseded", "", "the requests' superseded: demote (the service's default), keep (no supersession penalty) or exclude")
	replay := fs.Bool("replay", false, "replay mode: queries in order, one at a time, packs delivering, and the relevant items of each pack's top ten used (read) by the caller, so access counts evolve as in production (see bench.WithReplay)")
	conv := fs.String("conversation", "config", "conversation-aware retrieval: config (H4R_CONVERSATION), on or off")
	againstBM25 := fs.Bool("against-bm25", false, "also run every dataset with relevance-only BM25 (keyword queries, relevance-only weights, conversation and query expansion off) in the same process, and report the difference by query category")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch *conv {
	case "config":
	case "on", "off":
		cfg.Conversation = *conv == "on"
	default:
		return usageError{fmt.Sprintf("bench quality: --conversation must be config, on or off, got %q", *conv)}
	}
	if len(c.datasets) == 0 {
		return usageError{"bench quality: --dataset DIR is required"}
	}
	w, lambda, err := parseWeights(*weights, cfg)
	if err != nil {
		return err
	}
	cfg.RecencyDecayLambda = lambda
	cfg.WeightsFile = "" // applied above; the request carries the weights
	type setup struct {
		name    string
		cfg     config.Config
		weights h4r.Weights
		lambda  float64
		qtype   string
	}
	setups := []setup{{"", cfg, w, lambda, c.qtype}}
	if *againstBM25 {
		// Relevance-only BM25: full-text only, whatever the service's
		// default type, and none of the stages layered on it.
		base := cfg
		base.Conversation, base.QueryExpansion = false, false
		setups = []setup{{"bm25", base, bench.RelevanceOnly(), lambda, string(h4r.QueryKeyword)}, setups[0]}
	}
	var reps []*bench.QualityReport
	for _, dir := range c.datasets {
		for _, su := range setups {
			sc := c
			sc.qtype = su.qtype
			rep, err := qualityRun(ctx, su.cfg, dir, su.name, &sc, su.weights, su.lambda, stderr, bench.WithWeights(su.weights), bench.WithDelivery(*deliver), bench.WithReplay(*replay), bench.WithSuperseded(*superseded))
			if err != nil {
				return err
			}
			reps = append(reps, rep)
		}
	}
	var md strings.Builder
	bench.QualityMarkdown(&md, reps)
	if *againstBM25 {
		md.WriteString("\n")
		bench.ComparisonMarkdown(&md, reps)
	}
	if err := os.WriteFile(filepath.Join(c.out, "quality.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("writing the Markdown report: %w", err)
	}
	fmt.Fprint(stdout, md.String())
	fmt.Fprintf(stdout, "\nreports in %s (quality-DATASET.json, quality-DATASET-queries.jsonl, quality.md)\n", c.out)
	return nil
}

// qualityRun loads one dataset into a fresh store, runs its queries with
// the given weights and writes its report files (quality-DATASET, with
// "-"+setup after it when the setup has a name).
func qualityRun(ctx context.Context, cfg config.Config, dir, setup string, c *benchCommon, w h4r.Weights, lambda float64, stderr io.Writer, opts ...bench.RunOption) (*bench.QualityReport, error) {
	start := time.Now()
	ds, runs, err := collect(ctx, cfg, dir, c, stderr, opts...)
	if err != nil {
		return nil, err
	}
	overall, groups, per := bench.Evaluate(ds, runs)
	degraded := 0
	for _, r := range runs {
		if r.Status != h4r.StatusOK {
			degraded++
		}
	}
	if degraded > 0 {
		fmt.Fprintf(stderr, "%s: %d of %d packs were degraded (a generator failed or missed --generator-timeout); see the per-query file's warnings\n", ds.Name, degraded, len(runs))
	}
	rep := &bench.QualityReport{Degraded: degraded,
		Schema: bench.QualitySchema, Dataset: ds.Name, Setup: setup, Store: storeName(cfg), QueryType: c.qtype,
		Weights: bench.WeightsMap(w), Lambda: lambda, Conversation: cfg.Conversation, Docs: len(ds.Docs), Queries: len(runs),
		Overall: overall, Groups: groups, Seconds: time.Since(start).Seconds(), PerQuery: per,
	}
	base := filepath.Join(c.out, "quality-"+ds.Name)
	if setup != "" {
		base += "-" + setup
	}
	if err := bench.WriteJSON(base+".json", rep); err != nil {
		return nil, err
	}
	if err := bench.WritePerQuery(base+"-queries.jsonl", per); err != nil {
		return nil, err
	}
	return rep, nil
}

func cmdBenchTune(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	if err := cfg.ApplyWeightsFile(); err != nil {
		return err
	}
	fs := flag.NewFlagSet("bench tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `bench tune --dataset DIR [--dataset DIR ...] [flags]`)
	var c benchCommon
	c.register(fs)
	k := fs.Int("k", 5, "folds of cross-validation over queries")
	seed := fs.Uint64("seed", 1, "seed of folds, restarts and parameter order")
	restarts := fs.Int("restarts", 4, "random starting points of coordinate ascent (besides relevance-only, the seed's and the current weights)")
	weightsOut := fs.String("weights-out", "", "where to write the tuned weights file (default OUT/weights.json)")
	saveCache := fs.String("save-cache", "", "write the collected candidates and signals to this file")
	fromCache := fs.String("from-cache", "", "tune from a file written by --save-cache instead of running the datasets' queries")
	fromFeedback := fs.Bool("from-feedback", false, "also tune on the feedback stored by POST /feedback, over the configured store (H4R_DATA_DIR or DATABASE_URL): each judged pack is a query, its items graded by the verdict")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(c.datasets) == 0 && *fromCache == "" && !*fromFeedback {
		return usageError{"bench tune: --dataset DIR (or --from-cache FILE, or --from-feedback) is required"}
	}
	if *weightsOut == "" {
		*weightsOut = filepath.Join(c.out, "weights.json")
	}
	start := time.Now()
	current := bench.Params{Weights: cfg.Weights, Lambda: cfg.RecencyDecayLambda}
	cfg.WeightsFile = ""
	var qs []*bench.TuneQuery
	if *fromCache != "" {
		cache, err := bench.ReadCache(*fromCache)
		if err != nil {
			return err
		}
		qs = cache.Queries
	}
	for _, dir := range c.datasets {
		// Signals do not depend on the weights; the configured ones are sent.
		ds, runs, err := collect(ctx, cfg, dir, &c, stderr)
		if err != nil {
			return err
		}
		qs = append(qs, bench.NewTuneQueries(ds, runs)...)
	}
	if *fromFeedback {
		fq, err := feedbackQueries(ctx, cfg, &c, stderr)
		if err != nil {
			return err
		}
		qs = append(qs, fq...)
	}
	if len(qs) < *k {
		return fmt.Errorf("bench tune: %d labelled queries, fewer than the %d folds (--k): judge more packs, or lower --k", len(qs), *k)
	}
	if *saveCache != "" {
		if err := bench.WriteJSON(*saveCache, bench.Cache{Schema: bench.CacheSchema, Lambda: cfg.RecencyDecayLambda, Queries: qs}); err != nil {
			return err
		}
	}
	relevance := bench.Params{Weights: bench.RelevanceOnly(), Lambda: cfg.RecencyDecayLambda}
	seedP := bench.Params{Weights: bench.SeedWeights(), Lambda: 0.1}
	t := bench.NewTuner(bench.WithSeed(*seed), bench.WithRestarts(*restarts), bench.WithStarts(relevance, current, seedP))
	rep, err := bench.CrossValidate(ctx, qs, *k, t, []bench.Baseline{
		{Name: "relevance-only", Params: relevance},
		{Name: "seed", Params: seedP},
		{Name: "current", Params: current},
	}, stderr)
	if err != nil {
		return err
	}
	rep.Store = storeName(cfg)
	rep.Command = "h4r bench " + strings.Join(append([]string{"tune"}, args...), " ")
	rep.Seconds = time.Since(start).Seconds()
	heldOut := map[string]float64{}
	for _, c := range rep.HeldOut {
		heldOut[c.Dataset+"/ndcg@10"] = round3(c.Tuned.NDCG10)
		heldOut[c.Dataset+"/ndcg@10 relevance-only"] = round3(c.Baselines["relevance-only"].NDCG10)
	}
	wf := config.WeightsFile{Weights: rep.Final.Weights, RecencyDecayLambda: rep.Final.Lambda, Source: rep.Command, HeldOut: heldOut}
	if err := bench.WriteJSON(*weightsOut, wf); err != nil {
		return err
	}
	if err := bench.WriteJSON(filepath.Join(c.out, "tune.json"), rep); err != nil {
		return err
	}
	var md strings.Builder
	bench.TuneMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(c.out, "tune.md"), []byte(md.String()), 0o644); err != nil {
		return fmt.Errorf("writing the Markdown report: %w", err)
	}
	if err := writeFile(filepath.Join(c.out, "tune-sweep.svg"), func(w io.Writer) error { return bench.SweepSVG(w, rep) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(c.out, "tune-path.svg"), func(w io.Writer) error { return bench.PathSVG(w, rep) }); err != nil {
		return err
	}
	fmt.Fprint(stdout, md.String())
	fmt.Fprintf(stdout, "\nweights file: %s (serve it with H4R_WEIGHTS_FILE=%s h4r serve)\nreports in %s (tune.json, tune.md, tune-sweep.svg, tune-path.svg)\n", *weightsOut, *weightsOut, c.out)
	return nil
}

func round3(x float64) float64 { return float64(int(x*1000+0.5)) / 1000 }

// writeFile creates path (and its folder) and writes it with fn.
func writeFile(path string, fn func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

func cmdBenchGen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench gen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `bench gen --out DIR [flags]`)
	out := fs.String("out", "", "folder to write the dataset to (required)")
	seed := fs.Uint64("seed", 1, "random seed: the same seed writes the same files")
	per := fs.Int("queries", 30, "queries per category (there are 8 categories)")
	noise := fs.Int("noise", 8, "unrelated items per query scope")
	kind := fs.String("kind", "memory", "memory (one scope per query, each signal deciding a category) or conversation (multi-session dialogues, questions by category)")
	conversations := fs.Int("conversations", 50, "conversations (--kind conversation)")
	sessions := fs.Int("sessions", 4, "sessions per conversation, a week apart (--kind conversation; at least 3)")
	turns := fs.Int("turns", 12, "turns per session (--kind conversation; at least 6)")
	hard := fs.Bool("hard", false, "the harder conversation set (--kind conversation): paraphrased questions, distractor sessions on the same topics, knowledge updates and temporal questions, ten sessions per conversation")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageError{"bench gen: --out DIR is required"}
	}
	switch *kind {
	case "memory":
	case "conversation":
		if err := bench.GenerateConversations(*out, bench.ConvOptions{Seed: *seed, Conversations: *conversations, Sessions: *sessions, Turns: *turns, Hard: *hard}); err != nil {
			return err
		}
		questions := bench.ConvQuestions
		if *hard {
			questions = bench.ConvHardQuestions
		}
		fmt.Fprintf(stdout, "wrote a conversation dataset (%d conversations, %d questions, seed %d) to %s\n", *conversations, *conversations*questions, *seed, *out)
		return nil
	default:
		return usageError{fmt.Sprintf("bench gen: --kind must be memory or conversation, got %q", *kind)}
	}
	if err := bench.Generate(*out, bench.GenOptions{Seed: *seed, PerCategory: *per, Noise: *noise}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a synthetic dataset (%d queries, seed %d) to %s\n", *per*len(bench.GenCategories()), *seed, *out)
	return nil
}

func cmdBenchLatency(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) error {
	cfg, err := app.LoadConfig(lookupEnv)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("bench latency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	describeFlags(fs, `bench latency [flags]`)
	sizes := fs.String("sizes", "1000,10000,100000,1000000", "corpus sizes, ascending (one store grows through them)")
	conc := fs.String("concurrency", "1,16,100", "requests in flight")
	requests := fs.Int("requests", 200, "requests per size and concurrency")
	seed := fs.Uint64("seed", 1, "seed of the corpus and the queries")
	qtype := fs.String("type", string(h4r.QueryHybrid), "query type")
	out := fs.String("out", "bench-out", "folder of the reports")
	verbose := fs.Bool("v", false, "log the service's warnings")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run, loading included, to this file (go tool pprof reads it)")
	memProfile := fs.String("memprofile", "", "write a heap profile to this file after the requests at each size, overwriting it (go tool pprof -sample_index=inuse_space reads it)")
	mutexProfile := fs.String("mutexprofile", "", "write a mutex contention profile of the whole run to this file at the end")
	blockProfile := fs.String("blockprofile", "", "write a blocking profile (waits of 10µs or more) of the whole run to this file at the end")
	api := fs.Bool("api", false, "measure through HTTP: start h4r serve on a store of each size (built once under --data) and decode every pack with a client")
	apiURL := fs.String("url", "", "with --api, measure the server at this URL instead of starting one (it must hold the corpus of --seed; --sizes names its size)")
	dataDir := fs.String("data", "bench-data", "with --api, the folder that keeps one store per size (items-SIZE), reused by later runs")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o := bench.LatencyOptions{Requests: *requests, Seed: *seed, QueryType: h4r.QueryType(*qtype), Progress: stderr}
	if o.Sizes, err = parseInts(*sizes); err != nil {
		return usageError{"--sizes: " + err.Error()}
	}
	if o.Concurrency, err = parseInts(*conc); err != nil {
		return usageError{"--concurrency: " + err.Error()}
	}
	if *requests <= 0 {
		return usageError{"--requests must be positive"}
	}
	command := "h4r bench " + strings.Join(append([]string{"latency"}, args...), " ")
	if *api || *apiURL != "" {
		// The profiles are of this process; through the API the packs are
		// made in the server's, and a profile of the client alone would
		// pass for one of the server.
		for _, p := range []struct{ flag, path string }{{"--cpuprofile", *cpuProfile}, {"--memprofile", *memProfile}, {"--mutexprofile", *mutexProfile}, {"--blockprofile", *blockProfile}} {
			if p.path != "" {
				return usageError{p.flag + " profiles packs made in process and cannot be used with --api or --url: the server is another process (profile it with perf, or use the in-process run without --api)"}
			}
		}
		return benchLatencyAPI(ctx, cfg, o, *apiURL, *dataDir, *out, command, stdout)
	}
	cleanup, err := freshStore(&cfg, "latency")
	if err != nil {
		return err
	}
	defer cleanup()
	defer tuneGC(ctx, cfg, slog.New(slog.DiscardHandler))()
	var opts []bench.RunOption
	if *verbose {
		opts = append(opts, bench.WithLogger(cfg.Logger(stderr)))
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	for _, p := range []struct{ name, path string }{{"mutex", *mutexProfile}, {"block", *blockProfile}} {
		if p.path == "" {
			continue
		}
		if p.name == "mutex" {
			runtime.SetMutexProfileFraction(5)
		} else {
			runtime.SetBlockProfileRate(10_000)
		}
		defer func() {
			if err := writeFile(p.path, func(w io.Writer) error { return pprof.Lookup(p.name).WriteTo(w, 0) }); err != nil {
				fmt.Fprintf(stderr, "writing the %s profile: %v\n", p.name, err)
			}
			runtime.SetMutexProfileFraction(0)
			runtime.SetBlockProfileRate(0)
		}()
	}
	var md strings.Builder
	o.AfterSize = func(rep *bench.LatencyReport) error {
		rep.Store = storeName(cfg)
		rep.Command = command
		if err := bench.WriteJSON(filepath.Join(*out, "latency.json"), rep); err != nil {
			return err
		}
		if *memProfile != "" {
			if err := writeFile(*memProfile, func(w io.Writer) error { return pprof.Lookup("heap").WriteTo(w, 0) }); err != nil {
				return fmt.Errorf("writing the heap profile: %w", err)
			}
		}
		md.Reset()
		bench.LatencyMarkdown(&md, rep)
		if err := os.WriteFile(filepath.Join(*out, "latency.md"), []byte(md.String()), 0o644); err != nil {
			return fmt.Errorf("writing the Markdown report: %w", err)
		}
		return writeFile(filepath.Join(*out, "latency.svg"), func(w io.Writer) error { return bench.LatencySVG(w, rep) })
	}
	if _, err := bench.Latency(ctx, cfg, o, opts...); err != nil {
		return err
	}
	fmt.Fprint(stdout, md.String())
	fmt.Fprintf(stdout, "\nreports in %s (latency.json, latency.md, latency.svg)\n", *out)
	return nil
}

// benchLatencyAPI is h4r bench latency --api: packs through HTTP.
func benchLatencyAPI(ctx context.Context, cfg config.Config, lo bench.LatencyOptions, url, dataDir, out, command string, stdout io.Writer) error {
	if cfg.DatabaseURL != "" && url == "" {
		return usageError{"bench latency --api builds embedded stores; unset DATABASE_URL, or target a server with --url"}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the h4r binary to serve: %w", err)
	}
	o := bench.APILatencyOptions{Sizes: lo.Sizes, Requests: lo.Requests, Concurrency: lo.Concurrency, Seed: lo.Seed,
		QueryType: lo.QueryType, DataDir: dataDir, URL: strings.TrimSuffix(url, "/"), Server: []string{self, "serve"}, Progress: lo.Progress, QueriesDir: out}
	var md strings.Builder
	o.AfterRun = func(rep *bench.APILatencyReport) error {
		rep.Command = command
		if err := bench.WriteJSON(filepath.Join(out, "api-latency.json"), rep); err != nil {
			return err
		}
		md.Reset()
		bench.APILatencyMarkdown(&md, rep)
		return os.WriteFile(filepath.Join(out, "api-latency.md"), []byte(md.String()), 0o644)
	}
	if _, err := bench.APILatency(ctx, cfg, o); err != nil {
		return err
	}
	fmt.Fprint(stdout, md.String())
	fmt.Fprintf(stdout, "\nreports in %s (api-latency.json, api-latency.md)\n", out)
	return nil
}

// parseInts reads a comma-separated list of positive whole numbers in
// ascending order.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive whole number", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("want ascending values, got %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

// startCPUProfile writes a CPU profile to path until the returned stop is
// called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting the CPU profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
