package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/internal/procmem"
)

// LatencySchema names the version of the latency report's JSON shape.
const LatencySchema = "h4r.bench.latency/v1"

// Stage names of the latency report beside the generators' own names.
const (
	StageRanking = "ranking"
	StageSlicing = "slicing"
	StagePack    = "pack"  // everything after slicing: TL;DR, graph, affordances
	StageTotal   = "total" // the whole request as the caller sees it
	StageFloor   = "floor" // the full-text index's search alone (timeFloor)
)

// LatencyOptions configure Latency.
type LatencyOptions struct {
	Sizes       []int // corpus sizes, ascending; each run adds items to the last
	Requests    int   // requests per (size, concurrency)
	Concurrency []int
	Seed        uint64
	QueryType   h4r.QueryType
	Vocabulary  int // distinct words of the generated corpus
	Progress    io.Writer
	// AfterSize is called with the report so far after each size, so that a
	// long run (1M items) leaves its results behind as it goes.
	AfterSize func(*LatencyReport) error
}

// Percentiles of one stage, in milliseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Mean float64 `json:"mean"`
}

// LatencyRun is one (corpus size, concurrency) measurement.
type LatencyRun struct {
	Size        int                    `json:"size"`
	Concurrency int                    `json:"concurrency"`
	Requests    int                    `json:"requests"`
	Degraded    int                    `json:"degraded"` // packs with a failed or late generator
	Seconds     float64                `json:"seconds"`
	Throughput  float64                `json:"throughputPerSecond"`
	Stages      map[string]Percentiles `json:"stages"`
	// TotalOverFloorP50 is the pipeline's p50 over the raw candidate
	// query's p50 at concurrency 1: what the pipeline costs beyond search.
	TotalOverFloorP50 float64 `json:"totalOverFloorP50"`
}

// LatencyReport is the result of h4r bench latency.
type LatencyReport struct {
	Schema    string              `json:"schema"`
	Store     string              `json:"store"`
	QueryType string              `json:"queryType"`
	Seed      uint64              `json:"seed"`
	Load      map[int]float64     `json:"loadSeconds"` // seconds to add the items up to each size
	Floor     map[int]Percentiles `json:"floor"`       // the full-text index's search alone, concurrency 1
	Memory    map[int]Memory      `json:"memory"`      // after the requests at each size
	Runs      []LatencyRun        `json:"runs"`
	Command   string              `json:"command"`
}

// Memory is the benchmark process's memory after the requests at one size:
// the process holds the whole service (store, indexes, caches), so its
// resident set is what a server of that size needs.
type Memory struct {
	ResidentMB     float64 `json:"residentMB"`     // resident set now
	PeakResidentMB float64 `json:"peakResidentMB"` // the most resident so far, loading included
	LiveHeapMB     float64 `json:"liveHeapMB"`     // Go heap reachable after a collection
}

// measureMemory collects garbage, then reads the process's memory.
func measureMemory() (Memory, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r, err := procmem.Self()
	if err != nil {
		return Memory{}, fmt.Errorf("latency: %w", err)
	}
	const mb = 1 << 20
	return Memory{ResidentMB: float64(r.Current) / mb, PeakResidentMB: float64(r.Peak) / mb, LiveHeapMB: float64(ms.HeapAlloc) / mb}, nil
}

// memoryCorpus generates agent-memory items: short notes over a Zipf
// vocabulary (a few words are everywhere, most are rare, as in real text),
// dated over a year, with scores, and half of them linked to an earlier
// item so that hops have a graph to walk.
type memoryCorpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	words []string
	now   time.Time
}

func newMemoryCorpus(seed uint64, vocab int, now time.Time) *memoryCorpus {
	rng := rand.New(rand.NewPCG(seed, 0x6c6174))
	c := &memoryCorpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(vocab-1)), now: now}
	seen := map[string]bool{}
	cons, vows := "bcdfghjklmnprstvwz", "aeiou"
	for len(c.words) < vocab {
		var b strings.Builder
		for range 2 + rng.IntN(3) {
			b.WriteByte(cons[rng.IntN(len(cons))])
			b.WriteByte(vows[rng.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			c.words = append(c.words, w)
		}
	}
	return c
}

func (c *memoryCorpus) phrase(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.words[c.zipf.Uint64()]
	}
	return strings.Join(w, " ")
}

// items returns items from (1-based) from to to.
func (c *memoryCorpus) items(from, to int) []h4r.Item {
	out := make([]h4r.Item, 0, to-from+1)
	for i := from; i <= to; i++ {
		f := func() *float64 { x := math.Round(c.rng.Float64()*100) / 100; return &x }
		it := h4r.Item{ID: fmt.Sprintf("mem-%07d", i), Kind: "note", Text: c.phrase(20 + c.rng.IntN(40))}
		it.Metadata.CreatedAt = c.now.Add(-time.Duration(c.rng.Float64() * 365 * 24 * float64(time.Hour)))
		it.Metadata.Importance, it.Metadata.Novelty = f(), f()
		trust := 0.3 + 0.7*c.rng.Float64()
		sens := 0.6 * c.rng.Float64()
		it.Metadata.Trust, it.Metadata.Sensitivity = &trust, &sens
		if i > 1 && c.rng.IntN(2) == 0 {
			it.Links = []h4r.Link{{Type: "follows", Target: fmt.Sprintf("mem-%07d", 1+c.rng.IntN(i-1)), Strength: 1}}
		}
		out = append(out, it)
	}
	return out
}

// query is a rotating query: 3 words drawn from the vocabulary (a fixed
// query would measure a cache).
func (c *memoryCorpus) query() string { return c.phrase(3) }

// Latency grows one store through o.Sizes and, at each size, times the
// full-text index's search alone (the floor) and then whole requests at
// each concurrency. cfg must name a fresh store.
func Latency(ctx context.Context, cfg config.Config, o LatencyOptions, logOpts ...RunOption) (*LatencyReport, error) {
	ro := newRunOptions(logOpts)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	if o.Vocabulary <= 1 {
		o.Vocabulary = 20000
	}
	if o.QueryType == "" {
		o.QueryType = h4r.QueryHybrid
	}
	corpus := newMemoryCorpus(o.Seed, o.Vocabulary, now)
	a, err := app.Open(ctx, cfg, app.WithLogger(ro.log), app.WithClock(func() time.Time { return now }))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	rep := &LatencyReport{Schema: LatencySchema, QueryType: string(o.QueryType), Seed: o.Seed, Load: map[int]float64{}, Floor: map[int]Percentiles{}, Memory: map[int]Memory{}}
	loaded := 0
	for _, size := range o.Sizes {
		start := time.Now()
		p := newProgress(o.Progress, fmt.Sprintf("loading %d items", size), size-loaded)
		for loaded < size {
			end := min(loaded+1000, size)
			if _, err := a.Store.Upsert(ctx, corpus.items(loaded+1, end)); err != nil {
				return nil, fmt.Errorf("latency: writing items %d–%d: %w", loaded+1, end, err)
			}
			p.add(end - loaded)
			loaded = end
		}
		p.finish()
		// The learned embedder learns again when the corpus doubles, in
		// the background; here at once, so that each size is measured
		// with a model of it (learning and embedding count as loading).
		embedding := newProgress(o.Progress, fmt.Sprintf("embedding %d items with the learned model", size), size)
		embedded, err := a.LearnEmbedder(ctx, app.WithLearnProgress(embedding.reach))
		if err != nil && !errors.Is(err, embed.ErrNotLearned) {
			return nil, fmt.Errorf("latency: learning the embedder at %d items: %w", size, err)
		}
		if embedded > 0 {
			embedding.finish()
		}
		rep.Load[size] = time.Since(start).Seconds()

		floor, err := timeFloor(ctx, a, corpus, o)
		if err != nil {
			return nil, err
		}
		rep.Floor[size] = floor
		for _, c := range o.Concurrency {
			run, err := timeRequests(ctx, a, corpus, o, size, c)
			if err != nil {
				return nil, err
			}
			if floor.P50 > 0 {
				run.TotalOverFloorP50 = run.Stages[StageTotal].P50 / floor.P50
			}
			rep.Runs = append(rep.Runs, run)
		}
		if rep.Memory[size], err = measureMemory(); err != nil {
			return nil, err
		}
		if o.AfterSize != nil {
			if err := o.AfterSize(rep); err != nil {
				return nil, err
			}
		}
	}
	return rep, nil
}

// textIndexSearcher is a store whose full-text index can be searched
// without reading the hits' rows (store/sqlite).
type textIndexSearcher interface {
	SearchTextIndex(ctx context.Context, text string, k int) (int, error)
}

// timeFloor times the full-text floor, one query at a time: on the
// embedded store, the in-memory BM25 index's top 100 alone (no rows read);
// on another store, its full-text generator alone.
func timeFloor(ctx context.Context, a *app.App, corpus *memoryCorpus, o LatencyOptions) (Percentiles, error) {
	search := func(text string) error {
		_, err := a.Store.FullText().Generate(ctx, h4r.CandidateQuery{Text: text, Limit: 100})
		return err
	}
	if x, ok := a.Store.(textIndexSearcher); ok {
		search = func(text string) error {
			_, err := x.SearchTextIndex(ctx, text, 100)
			return err
		}
	}
	var ms []float64
	for range o.Requests {
		text := corpus.query()
		t0 := time.Now()
		if err := search(text); err != nil {
			return Percentiles{}, fmt.Errorf("latency: the full-text floor query %q: %w", text, err)
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	return percentiles(ms), nil
}

// timeRequests sends o.Requests whole requests with c in flight.
func timeRequests(ctx context.Context, a *app.App, corpus *memoryCorpus, o LatencyOptions, size, c int) (LatencyRun, error) {
	texts := make([]string, o.Requests)
	for i := range texts {
		texts[i] = corpus.query()
	}
	stages := map[string][]float64{}
	var (
		mu       sync.Mutex
		firstErr error
		degraded int
	)
	p := newProgress(o.Progress, fmt.Sprintf("%d items, %d in flight", size, c), o.Requests)
	start := time.Now()
	fanOut(ctx, len(texts), c, func(i int) {
		req := h4r.ContextRequest{Query: h4r.Query{Type: o.QueryType, Text: texts[i]}}
		t0 := time.Now()
		// Each request has the server's deadline (H4R_REQUEST_TIMEOUT):
		// one that waits for a pack slot past it comes back degraded.
		rctx, cancel := context.WithTimeout(ctx, a.Config.RequestTimeout)
		pk, err := a.Engine.ContextPack(rctx, Benchmarker(), &req)
		cancel()
		total := float64(time.Since(t0).Microseconds()) / 1000
		mu.Lock()
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("latency: request %q: %w", texts[i], err)
		}
		if err == nil {
			if pk.Status != h4r.StatusOK {
				degraded++
			}
			for name, s := range pk.Sources {
				stages[name] = append(stages[name], s.Ms)
			}
			t := pk.Explainability.Timings
			stages[StageRanking] = append(stages[StageRanking], t.RankingMs)
			stages[StageSlicing] = append(stages[StageSlicing], t.SlicingMs)
			stages[StagePack] = append(stages[StagePack], max(t.TotalMs-t.RetrievalMs-t.SlicingMs, 0))
			stages[StageTotal] = append(stages[StageTotal], total)
		}
		mu.Unlock()
		p.add(1)
	})
	p.finish()
	elapsed := time.Since(start).Seconds()
	if firstErr != nil {
		return LatencyRun{}, firstErr
	}
	run := LatencyRun{Size: size, Concurrency: c, Requests: o.Requests, Degraded: degraded, Seconds: elapsed,
		Throughput: float64(o.Requests) / elapsed, Stages: map[string]Percentiles{}}
	for name, ms := range stages {
		run.Stages[name] = percentiles(ms)
	}
	return run, ctx.Err()
}

// percentiles uses the nearest-rank method.
func percentiles(ms []float64) Percentiles {
	if len(ms) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	return Percentiles{P50: at(0.50), P95: at(0.95), P99: at(0.99), Mean: sum / float64(len(s))}
}

// LatencyMarkdown writes one table row per (size, concurrency).
func LatencyMarkdown(w io.Writer, r *LatencyReport) {
	names := stageNames(r)
	fmt.Fprintf(w, "Stage latencies in ms, p50 / p95 / p99 (%s store, %s queries of 3 rotating words):\n\n", r.Store, r.QueryType)
	fmt.Fprint(w, "| items | in flight | req/s | degraded |")
	for _, n := range names {
		fmt.Fprintf(w, " %s |", n)
	}
	fmt.Fprint(w, " floor (full-text index) | total p50 / floor p50 |\n|---:|---:|---:|---:|")
	for range names {
		fmt.Fprint(w, "---:|")
	}
	fmt.Fprintln(w, "---:|---:|")
	for _, run := range r.Runs {
		fmt.Fprintf(w, "| %d | %d | %.1f | %d |", run.Size, run.Concurrency, run.Throughput, run.Degraded)
		for _, n := range names {
			p := run.Stages[n]
			fmt.Fprintf(w, " %.1f / %.1f / %.1f |", p.P50, p.P95, p.P99)
		}
		f := r.Floor[run.Size]
		fmt.Fprintf(w, " %.1f / %.1f / %.1f | %.1f× |\n", f.P50, f.P95, f.P99, run.TotalOverFloorP50)
	}
	fmt.Fprintln(w, "\nThe floor is the full-text index's top 100 alone (the embedded store's in-memory BM25 index,")
	fmt.Fprintln(w, "no rows read; another store's full-text generator), one at a time and without a deadline. The engine")
	fmt.Fprintln(w, "builds 2 packs per CPU at once; the others wait their turn, and total counts the wait. A degraded")
	fmt.Fprintln(w, "pack stopped at its generator's deadline (H4R_GENERATOR_TIMEOUT), so its stages are cut short")
	fmt.Fprintln(w, "and total/floor can fall under 1, or waited past the request deadline (H4R_REQUEST_TIMEOUT) and")
	fmt.Fprintln(w, "is empty. Throughput counts degraded packs.")
	if len(r.Memory) == 0 {
		return
	}
	fmt.Fprint(w, "\nMemory of the process (the whole service in it) after the requests at each size, in MB:\n\n")
	fmt.Fprintln(w, "| items | resident | peak resident (loading included) | live Go heap |\n|---:|---:|---:|---:|")
	sizes := slices.Sorted(maps.Keys(r.Memory))
	for _, size := range sizes {
		m := r.Memory[size]
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.0f |\n", size, m.ResidentMB, m.PeakResidentMB, m.LiveHeapMB)
	}
}

// stageNames lists the stages found, generators first, in a fixed order.
func stageNames(r *LatencyReport) []string {
	fixed := []string{StageRanking, StageSlicing, StagePack, StageTotal}
	var gens []string
	for _, run := range r.Runs {
		for n := range run.Stages {
			if !slices.Contains(fixed, n) && !slices.Contains(gens, n) {
				gens = append(gens, n)
			}
		}
	}
	slices.Sort(gens)
	return append(gens, fixed...)
}

// LatencySVG charts p50 latency against corpus size, one panel per
// concurrency, one line per stage, with the full-text floor.
func LatencySVG(w io.Writer, r *LatencyReport) error {
	names := stageNames(r)
	var conc []int
	for _, run := range r.Runs {
		if !slices.Contains(conc, run.Concurrency) {
			conc = append(conc, run.Concurrency)
		}
	}
	var panels []panel
	for _, c := range conc {
		p := panel{title: fmt.Sprintf("%d in flight: p50 ms", c), xlabel: "items (log)", ylabel: "ms (log)", logX: true, logY: true, markX: math.NaN()}
		for _, n := range append(slices.Clone(names), StageFloor) {
			se := series{name: n}
			for _, run := range r.Runs {
				if run.Concurrency != c {
					continue
				}
				v := run.Stages[n].P50
				if n == StageFloor {
					v = r.Floor[run.Size].P50
				}
				se.xs = append(se.xs, float64(run.Size))
				se.ys = append(se.ys, max(v, 0.001))
			}
			p.series = append(p.series, se)
		}
		panels = append(panels, p)
	}
	return grid(w, "Stage latency vs corpus size ("+r.Store+")", panels, min(len(panels), 3), 420, 320)
}
