package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/embed"
	"github.com/h4r/h4r/engine"
)

// RunOption configures OpenLoaded and Run.
type RunOption func(*runOptions)

type runOptions struct {
	progress  io.Writer
	log       *slog.Logger
	batch     int
	workers   int
	queryType h4r.QueryType
	weights   *h4r.Weights
	deliver   bool
	replay    bool
	maxHops   int
	// superseded is the request's superseded (empty: the service's
	// default, demote).
	superseded string
	expansion  *expansionSetting
	endpoint   string       // the service's base URL: queries go over HTTP
	client     *http.Client // for endpoint
}

// WithEndpoint sends every query as POST base/v1/context-pack, the public
// API, instead of calling the engine in process: what an agent gets, JSON
// and handler included. The server must let an anonymous caller audit
// (H4R_ANONYMOUS_AUDIT), so that the pack ranks every candidate, and must
// serve the store the run loaded. WithExpansion does not apply over HTTP.
func WithEndpoint(base string, client *http.Client) RunOption {
	return func(o *runOptions) { o.endpoint, o.client = strings.TrimSuffix(base, "/"), client }
}

// expansionSetting is pseudo-relevance feedback as a run sets it.
type expansionSetting struct {
	on bool
	p  analysis.Expansion
}

// WithExpansion runs every query with pseudo-relevance feedback on or off,
// with the parameters p (default: as the service is configured).
func WithExpansion(on bool, p analysis.Expansion) RunOption {
	return func(o *runOptions) { o.expansion = &expansionSetting{on: on, p: p} }
}

func newRunOptions(opts []RunOption) runOptions {
	o := runOptions{batch: 500, workers: min(runtime.GOMAXPROCS(0), 4), queryType: h4r.DefaultQueryType, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithProgress draws progress lines on w (usually stderr).
func WithProgress(w io.Writer) RunOption { return func(o *runOptions) { o.progress = w } }

// WithLogger sets the logger of the service under test (default: discard).
func WithLogger(l *slog.Logger) RunOption { return func(o *runOptions) { o.log = l } }

// WithWorkers sets how many queries run at once (default: GOMAXPROCS, at
// most 4). Ranking does not depend on it: without deliveries no query
// changes what another sees.
func WithWorkers(n int) RunOption { return func(o *runOptions) { o.workers = max(n, 1) } }

// WithQueryType sets the request's query type (default: the service's,
// h4r.DefaultQueryType; the BM25 reference asks keyword, full-text only).
func WithQueryType(t h4r.QueryType) RunOption { return func(o *runOptions) { o.queryType = t } }

// WithWeights sends these weights with every request (default: the
// service's configured weights).
func WithWeights(w h4r.Weights) RunOption { return func(o *runOptions) { o.weights = &w } }

// WithMaxHops sets the request's max_hops (0: the service's H4R_MAX_HOPS).
func WithMaxHops(n int) RunOption { return func(o *runOptions) { o.maxHops = max(n, 0) } }

// WithSuperseded sets the request's superseded: demote, keep or exclude
// (empty: the default, demote). keep measures the ranking without the
// supersession penalty in the same run.
func WithSuperseded(mode string) RunOption { return func(o *runOptions) { o.superseded = mode } }

// WithDelivery lets packs deliver items (full budgets). By default a run
// asks for a one-byte budget, so that every ranked candidate is still
// decided by policy and listed in explainability.items but none is
// delivered: a delivery raises the item's accessCount, and so the frequency
// signal that later queries see — the benchmark would measure itself.
func WithDelivery(deliver bool) RunOption { return func(o *runOptions) { o.deliver = deliver } }

// WithReplay runs the queries as production would see them: in the
// dataset's order, one at a time, packs delivering (so deliveries count as
// accesses when H4R_ACCESS_COUNTING=delivery), and after each pack the
// caller uses the judged-relevant items among the first ten it delivered,
// recording one access each as an explicit read by id does. Access counts
// reach the store at its flush interval, as in production, so later
// queries see the uses of earlier ones: the frequency signal evolves while
// the run measures it.
func WithReplay(replay bool) RunOption {
	return func(o *runOptions) {
		o.replay = replay
		if replay {
			o.deliver, o.workers = true, 1
		}
	}
}

// OpenLoaded opens the service cfg describes (cfg.DataDir should be a fresh
// temporary folder, or DATABASE_URL a fresh database), writes the dataset's
// items, replays the dataset's access counts as deliveries through the
// store, and reopens the service so that they are flushed and read back. Its
// clock is fixed at ds.Now, so recency is reproducible.
func OpenLoaded(ctx context.Context, cfg config.Config, ds *Dataset, opts ...RunOption) (*app.App, error) {
	o := newRunOptions(opts)
	now := ds.Now
	clock := func() time.Time { return now }
	a, err := app.Open(ctx, cfg, app.WithLogger(o.log), app.WithClock(clock))
	if err != nil {
		return nil, err
	}
	items := ds.Items()
	p := newProgress(o.progress, "loading "+ds.Name, len(items))
	for start := 0; start < len(items); start += o.batch {
		end := min(start+o.batch, len(items))
		if _, err := a.Store.Upsert(ctx, items[start:end]); err != nil {
			a.Close()
			return nil, fmt.Errorf("%s: writing documents %d–%d: %w", ds.Name, start+1, end, err)
		}
		p.add(end - start)
	}
	p.finish()
	// What an operator does after a bulk load (h4r reindex): the learned
	// embedder learns from what was loaded and embeds it.
	if _, err := a.LearnEmbedder(ctx); err != nil && !errors.Is(err, embed.ErrNotLearned) {
		a.Close()
		return nil, fmt.Errorf("%s: learning the embedder: %w", ds.Name, err)
	}
	var accesses []string
	for _, d := range ds.Docs {
		for range d.AccessCount {
			accesses = append(accesses, d.ID)
		}
	}
	if len(accesses) == 0 {
		return a, nil
	}
	a.Store.RecordAccess(accesses)
	if err := a.Close(); err != nil {
		return nil, fmt.Errorf("%s: flushing %d replayed accesses: %w", ds.Name, len(accesses), err)
	}
	return app.Open(ctx, cfg, app.WithLogger(o.log), app.WithClock(clock))
}

// Candidate is one ranked candidate of a query: its id and eight signals.
type Candidate struct {
	ID      string      `json:"id"`
	Signals h4r.Signals `json:"signals"`
}

// QueryRun is what the pipeline answered for one query.
type QueryRun struct {
	Query   Query
	Ranked  []Candidate // every ranked candidate, best first
	Timings h4r.Timings
	Sources map[string]h4r.SourceStats
	Status  string
	Warn    []string
	// Delivered are the ids the pack delivered, best first (none unless
	// the run delivers).
	Delivered []string
}

// usedItems are the items of delivered's first ten that judged calls
// relevant: what a caller who read the pack would use.
func usedItems(delivered []string, judged Judgments) []string {
	var used []string
	for _, id := range delivered[:min(10, len(delivered))] {
		if judged[id] > 0 {
			used = append(used, id)
		}
	}
	return used
}

// RankedIDs returns the ranking's ids, best first.
func (r *QueryRun) RankedIDs() []string {
	ids := make([]string, len(r.Ranked))
	for i, c := range r.Ranked {
		ids[i] = c.ID
	}
	return ids
}

// Benchmarker is the specialist every benchmark request is made as: full
// clearance, so that policy only removes what it removes for everyone
// (credentials, trust under 0.3) and the measure is of ranking.
func Benchmarker() h4r.Specialist {
	return h4r.Specialist{Type: "specialist", ID: "h4r-bench", SecurityLevel: h4r.Restricted, AuthorizedGroups: []string{}}
}

// Run sends every query of ds through a.Engine.ContextPack and returns what
// each ranked, in query order. A query longer than a request allows is cut
// at a word boundary (its id is in the run's warnings).
func Run(ctx context.Context, a *app.App, ds *Dataset, opts ...RunOption) ([]QueryRun, error) {
	o := newRunOptions(opts)
	eng := a.Engine
	if o.expansion != nil {
		eng = eng.Expanding(o.expansion.on, o.expansion.p)
	}
	runs := make([]QueryRun, len(ds.Queries))
	p := newProgress(o.progress, "querying "+ds.Name, len(ds.Queries))
	defer p.finish()
	var (
		mu       sync.Mutex
		firstErr error
	)
	fanOut(ctx, len(ds.Queries), o.workers, func(i int) {
		r, err := runQuery(ctx, eng, ds.Queries[i], o)
		if err == nil && o.replay {
			if used := usedItems(r.Delivered, ds.Qrels[r.Query.ID]); len(used) > 0 {
				a.Store.RecordAccess(used)
			}
		}
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: query %s: %w", ds.Name, ds.Queries[i].ID, err)
			}
			mu.Unlock()
		}
		runs[i] = r
		p.add(1)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return runs, ctx.Err()
}

func runQuery(ctx context.Context, eng *engine.Engine, q Query, o runOptions) (QueryRun, error) {
	text := cutText(q.Text, h4r.MaxQueryTextBytes)
	zero := 0
	noGraph := false
	req := h4r.ContextRequest{
		Query:         h4r.Query{Type: o.queryType, Text: text},
		Limit:         h4r.MaxLimit,
		TLDRSentences: &zero,
		IncludeGraph:  &noGraph,
		MaxHops:       o.maxHops,
		Superseded:    o.superseded,
	}
	if q.Scope != "" {
		req.Query.Filters = map[string]any{ScopeKey: q.Scope}
	}
	if !q.AsOf.IsZero() {
		req.AsOf = q.AsOf.Format(time.RFC3339)
	}
	if !o.deliver {
		req.Budget = &h4r.Budget{MaxBytes: 1}
	}
	if o.weights != nil {
		req.Weights = make(map[string]float64, h4r.NumSignals)
		for s := h4r.Signal(0); s < h4r.NumSignals; s++ {
			req.Weights[s.String()] = o.weights[s]
		}
	}
	// The ranking of every candidate, not only the kept ones.
	req.Explain = h4r.ExplainAll
	var p *h4r.Pack
	var err error
	if o.endpoint != "" {
		p, err = askEndpoint(ctx, o, req)
	} else {
		p, err = runPlan(ctx, eng, req)
	}
	if err != nil {
		return QueryRun{Query: q}, err
	}
	r := QueryRun{Query: q, Timings: p.Explainability.Timings, Sources: p.Sources, Status: p.Status, Warn: p.Explainability.Warnings}
	for _, res := range p.Results {
		r.Delivered = append(r.Delivered, res.ID)
	}
	r.Ranked = make([]Candidate, len(p.Explainability.Items))
	for _, it := range p.Explainability.Items {
		if it.Rank < 1 || it.Rank > len(r.Ranked) {
			return r, fmt.Errorf("explainability item %s has rank %d of %d", it.ID, it.Rank, len(r.Ranked))
		}
		r.Ranked[it.Rank-1] = Candidate{ID: it.ID, Signals: it.Signals}
	}
	if len(text) < len(q.Text) {
		r.Warn = append(r.Warn, fmt.Sprintf("query text cut from %d to %d bytes", len(q.Text), len(text)))
	}
	return r, nil
}

// runPlan plans req and runs it through eng in process.
func runPlan(ctx context.Context, eng *engine.Engine, req h4r.ContextRequest) (*h4r.Pack, error) {
	plan, err := req.Plan("")
	if err != nil {
		return nil, err
	}
	// The ranking of every candidate, those policy denies included: the
	// bench opens the store itself and measures ranking, not policy.
	plan.Audit = true
	return eng.Run(ctx, Benchmarker(), plan)
}

// askEndpoint asks the service at o.endpoint for req's pack, as the
// benchmark's specialist.
func askEndpoint(ctx context.Context, o runOptions, req h4r.ContextRequest) (*h4r.Pack, error) {
	spec := Benchmarker()
	req.Specialist = &spec
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.endpoint+"/v1/context-pack", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := o.client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("POST /v1/context-pack: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the pack: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("POST /v1/context-pack: %s: %s", resp.Status, cutText(string(raw), 512))
	}
	var p h4r.Pack
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("decoding the pack: %w", err)
	}
	return &p, nil
}

// cutText cuts s to at most n bytes, at a space when there is one, never
// inside a UTF-8 sequence.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	for i := cut; i > n/2; i-- {
		if s[i] == ' ' {
			return s[:i]
		}
	}
	return s[:cut]
}
