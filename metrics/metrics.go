package metrics

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/h4r/h4r"
)

// stageBuckets suit stages that take from a tenth of a millisecond to the
// two-second request deadline and beyond.
var stageBuckets = []float64{.0001, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2, 5}

// ratioBuckets cover a budget's utilisation from empty to full.
var ratioBuckets = []float64{0, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, 1}

// Metrics are one server's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	retrieval   prometheus.Histogram
	generator   *prometheus.HistogramVec
	candidates  *prometheus.CounterVec
	slicing     prometheus.Histogram
	assembly    prometheus.Histogram
	budget      *prometheus.HistogramVec
	affordances *prometheus.CounterVec
	packs       *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	canceled    *prometheus.CounterVec
	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
}

// CacheStats reports a decision cache's hits and misses since it started
// (the policy engine's counters).
type CacheStats func() (hits, misses uint64)

// ItemCache is what a store's item cache reports (the store's
// itemcache.Stats; metrics sits below the index layer and does not import
// it).
type ItemCache struct {
	Hits, Misses uint64 // lookups it answered and did not since it started
	Items        int    // items it holds
	Bytes        int64  // their estimated memory, the budget's measure
	Selective    bool   // it keeps only the items reads come back to
}

// ItemCacheStats reports a store's item cache.
type ItemCacheStats func() ItemCache

type options struct {
	opaCache  CacheStats
	itemCache ItemCacheStats
	inFlight  func() int
}

// Option configures New.
type Option func(*options)

// WithOPACache makes scs_opa_cache_hits_total and _misses_total report the
// policy decision cache's counters. Without it both stay registered at 0,
// so that dashboards and alerts can be written before the cache exists.
func WithOPACache(stats CacheStats) Option { return func(o *options) { o.opaCache = stats } }

// WithItemCache makes h4r_item_cache_hits_total, _misses_total,
// h4r_item_cache_items, h4r_item_cache_bytes and h4r_item_cache_selective
// report the store's item cache. Without it the five stay registered at 0.
func WithItemCache(stats ItemCacheStats) Option { return func(o *options) { o.itemCache = stats } }

// WithPacksInFlight makes h4r_packs_in_flight report the packs the engine
// is building now (engine.Engine.InFlight, the one admission point).
// Without it the gauge stays registered at 0.
func WithPacksInFlight(n func() int) Option { return func(o *options) { o.inFlight = n } }

// New registers every metric in a new registry.
func New(opts ...Option) *Metrics {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.opaCache == nil {
		o.opaCache = func() (uint64, uint64) { return 0, 0 }
	}
	if o.inFlight == nil {
		o.inFlight = func() int { return 0 }
	}
	if o.itemCache == nil {
		o.itemCache = func() ItemCache { return ItemCache{} }
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		retrieval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "h4r_retrieval_duration_seconds", Help: "Candidate generation and ranking of one context pack (explainability.timings.retrievalMs).", Buckets: stageBuckets}),
		generator: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "h4r_generator_duration_seconds", Help: "One candidate generator's run within a context pack (sources.<source>.ms).", Buckets: stageBuckets}, []string{"source"}),
		candidates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_candidates_total", Help: "Candidates found, by generator (fulltext, vector, graph)."}, []string{"source"}),
		slicing: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "scs_slicing_duration_seconds", Help: "Policy decisions, redaction and budgets of one context pack (explainability.timings.slicingMs).", Buckets: stageBuckets}),
		assembly: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "context_pack_assembly_duration_seconds", Help: "Building the pack from the sliced items: TL;DR, graph, affordances (explainability.timings.summarizationMs).", Buckets: stageBuckets}),
		budget: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "scs_budget_utilization_ratio", Help: "Share of a pack's budget used, by kind (bytes, tokens, items).", Buckets: ratioBuckets}, []string{"kind"}),
		affordances: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "context_pack_affordances_generated_total", Help: "Affordances suggested in packs, by type."}, []string{"type"}),
		packs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "context_packs_total", Help: "Context packs answered, by status (ok, degraded)."}, []string{"status"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_requests_rejected_total", Help: "Requests answered with an error, by error code (unauthenticated, permission_denied, resource_exhausted, invalid_argument, …)."}, []string{"reason"}),
		canceled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_requests_cancelled_total", Help: "Requests their client closed before the answer (logged with status 499), by route pattern; not errors of the server, so not in h4r_requests_rejected_total."}, []string{"route"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_http_requests_total", Help: "HTTP requests by route pattern and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "h4r_http_request_duration_seconds", Help: "HTTP request duration by route pattern.", Buckets: stageBuckets}, []string{"route"}),
	}
	inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "h4r_packs_in_flight", Help: "Context packs being built now (at most the engine's pack slots)."},
		func() float64 { return float64(o.inFlight()) })
	hits := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "scs_opa_cache_hits_total", Help: "Policy decisions answered from the decision cache."},
		func() float64 { h, _ := o.opaCache(); return float64(h) })
	misses := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "scs_opa_cache_misses_total", Help: "Policy decisions the decision cache did not hold."},
		func() float64 { _, mi := o.opaCache(); return float64(mi) })
	itemHits := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "h4r_item_cache_hits_total", Help: "Items that reads found decoded in the store's item cache (H4R_ITEM_CACHE_MB)."},
		func() float64 { return float64(o.itemCache().Hits) })
	itemMisses := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "h4r_item_cache_misses_total", Help: "Items that reads did not find in the store's item cache, read and decoded from their rows."},
		func() float64 { return float64(o.itemCache().Misses) })
	itemCount := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "h4r_item_cache_items", Help: "Items the store's item cache holds."},
		func() float64 { return float64(o.itemCache().Items) })
	itemBytes := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "h4r_item_cache_bytes", Help: "Estimated memory of what the store's item cache holds, the measure of its budget."},
		func() float64 { return float64(o.itemCache().Bytes) })
	itemSelective := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "h4r_item_cache_selective", Help: "1 when the store's item cache keeps only the items reads come back to (once the store has outgrown H4R_ITEM_CACHE_MB), else 0."},
		func() float64 {
			if o.itemCache().Selective {
				return 1
			}
			return 0
		})
	reg.MustRegister(m.retrieval, m.generator, m.candidates, m.slicing, m.assembly, m.budget,
		m.affordances, m.packs, m.rejected, m.canceled, m.requests, m.duration, inFlight, hits, misses,
		itemHits, itemMisses, itemCount, itemBytes, itemSelective,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for tests and for callers that add their
// own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RegisterBridge adds the context bridge's metrics (h4r_bridge_*, a
// bridge.Metrics) to the registry. Registering them again, as two
// servers over one registry do, is not an error.
func (m *Metrics) RegisterBridge(c prometheus.Collector, log *slog.Logger) {
	if err := m.reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			log.Error("the context bridge's metrics could not be registered", "error", err)
		}
	}
}

// ObservePack records one delivered pack.
func (m *Metrics) ObservePack(p *h4r.Pack) {
	t := p.Explainability.Timings
	m.retrieval.Observe(t.RetrievalMs / 1000)
	m.slicing.Observe(t.SlicingMs / 1000)
	m.assembly.Observe(t.SummarizationMs / 1000)
	for name, s := range p.Sources {
		m.candidates.WithLabelValues(name).Add(float64(s.Candidates))
		m.generator.WithLabelValues(name).Observe(s.Ms / 1000)
	}
	used, limit := p.Explainability.Slicing.BudgetUsed, p.Explainability.Slicing.BudgetLimit
	for _, k := range []struct {
		kind        string
		used, limit int
	}{{"bytes", used.Bytes, limit.Bytes}, {"tokens", used.EstimatedTokens, limit.EstimatedTokens}, {"items", used.Items, limit.Items}} {
		if k.limit > 0 {
			m.budget.WithLabelValues(k.kind).Observe(float64(k.used) / float64(k.limit))
		}
	}
	for _, a := range p.Explainability.Affordances {
		m.affordances.WithLabelValues(a.Type).Inc()
	}
	m.packs.WithLabelValues(p.Status).Inc()
}

// Rejected counts a request answered with an error of the given code.
func (m *Metrics) Rejected(code string) { m.rejected.WithLabelValues(code).Inc() }

// Canceled counts a request its client closed before the answer. route is
// the matched pattern, as in ObserveRequest.
func (m *Metrics) Canceled(route string) {
	if route == "" {
		route = "unmatched"
	}
	m.canceled.WithLabelValues(route).Inc()
}

// ObserveRequest records one HTTP request. route is the matched pattern
// ("/v1/items/:id"), never the raw path, so that labels stay bounded.
func (m *Metrics) ObserveRequest(route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
}
