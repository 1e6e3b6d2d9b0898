package bridge

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// SlowEnrichment is how long an enrichment may take before it is logged
// at WARN with its elapsed time.
const SlowEnrichment = 100 * time.Millisecond

// latencyBuckets (seconds) put bounds at the alert thresholds of the
// enrichment latency (75 and 100 ms) and the default timeout (2 s).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .075, .1, .25, .5, 1, 2, 5}

// Metrics counts what the bridge did. It is a prometheus.Collector: the
// server registers it in its registry (the names in docs/bridge.md).
type Metrics struct {
	Enrichments, Matches, CacheHits, CacheMisses, Errors, Timeouts, EmbeddingFailures atomic.Int64

	observed, latencyNanos, maxLatencyNanos atomic.Int64
	// buckets[i] counts enrichments of at most latencyBuckets[i] and more
	// than the bound before; collection sums them into the histogram's.
	buckets [13]atomic.Int64
	// degraded is the outcome of the latest enrichment: it failed (the
	// store, the timeout), with why; the next one that does not clears it.
	mu       sync.Mutex
	degraded string
}

// Snapshot returns the counters by their wire names (error_count and
// timeout_count as the degradation contract names them).
func (m *Metrics) Snapshot() map[string]int64 {
	total := m.Enrichments.Load()
	avg := int64(0)
	if n := m.observed.Load(); n > 0 {
		avg = m.latencyNanos.Load() / n / int64(time.Millisecond)
	}
	return map[string]int64{
		"total_enrichments": total, "total_matches": m.Matches.Load(),
		"cache_hits": m.CacheHits.Load(), "cache_misses": m.CacheMisses.Load(),
		"error_count": m.Errors.Load(), "timeout_count": m.Timeouts.Load(), "embedding_failures": m.EmbeddingFailures.Load(),
		"avg_latency_ms": avg, "max_latency_ms": m.maxLatencyNanos.Load() / int64(time.Millisecond),
	}
}

// observe records the latency of one enrichment and whether it failed
// ("": it did not; otherwise the reason, timeout or error).
func (m *Metrics) observe(d time.Duration, failed string) {
	n := d.Nanoseconds()
	m.observed.Add(1)
	m.latencyNanos.Add(n)
	for cur := m.maxLatencyNanos.Load(); n > cur && !m.maxLatencyNanos.CompareAndSwap(cur, n); cur = m.maxLatencyNanos.Load() {
	}
	for i, le := range latencyBuckets {
		if d.Seconds() <= le {
			m.buckets[i].Add(1)
			break
		}
	}
	m.mu.Lock()
	m.degraded = failed
	m.mu.Unlock()
}

// Degraded returns why the latest enrichment failed (timeout, error), ""
// when it did not or there was none: the bridge's health.
func (m *Metrics) Degraded() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.degraded
}

var (
	descEnrichments = prometheus.NewDesc("h4r_bridge_enrichments_total", "Context bridge calls that had text to match on (allow-listed tool, bridge on).", nil, nil)
	descMatches     = prometheus.NewDesc("h4r_bridge_matches_total", "Similar trajectories delivered in context_bridge blocks.", nil, nil)
	descHits        = prometheus.NewDesc("h4r_bridge_cache_hits_total", "Context bridge calls answered from the signature cache.", nil, nil)
	descMisses      = prometheus.NewDesc("h4r_bridge_cache_misses_total", "Context bridge calls the signature cache did not answer.", nil, nil)
	descHitRatio    = prometheus.NewDesc("h4r_bridge_cache_hit_ratio", "Cache hits over hits and misses since start (0 before any call).", nil, nil)
	descErrors      = prometheus.NewDesc("h4r_bridge_errors_total", "Context bridge calls whose read of trajectories failed (answered without context_bridge).", nil, nil)
	descTimeouts    = prometheus.NewDesc("h4r_bridge_timeouts_total", "Context bridge calls that outlasted H4R_BRIDGE_TIMEOUT (answered with status degraded).", nil, nil)
	descEmbedFails  = prometheus.NewDesc("h4r_bridge_embedding_failures_total", "Context bridge calls whose embedding failed (answered concept-only).", nil, nil)
	descLatency     = prometheus.NewDesc("h4r_bridge_enrichment_duration_seconds", "Duration of one context bridge enrichment, its wait for a turn included.", nil, nil)
	descAvg         = prometheus.NewDesc("h4r_bridge_enrichment_avg_seconds", "Mean enrichment duration since start.", nil, nil)
	descMax         = prometheus.NewDesc("h4r_bridge_enrichment_max_seconds", "Longest enrichment since start.", nil, nil)
	descDegraded    = prometheus.NewDesc("h4r_bridge_degraded", "1 when the latest enrichment failed (timeout or error), else 0.", nil, nil)
)

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descEnrichments, descMatches, descHits, descMisses, descHitRatio, descErrors,
		descTimeouts, descEmbedFails, descLatency, descAvg, descMax, descDegraded} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	total, hits, misses := m.Enrichments.Load(), m.CacheHits.Load(), m.CacheMisses.Load()
	counter(descEnrichments, total)
	counter(descMatches, m.Matches.Load())
	counter(descHits, hits)
	counter(descMisses, misses)
	ratio := 0.0
	if hits+misses > 0 {
		ratio = float64(hits) / float64(hits+misses)
	}
	gauge(descHitRatio, ratio)
	counter(descErrors, m.Errors.Load())
	counter(descTimeouts, m.Timeouts.Load())
	counter(descEmbedFails, m.EmbeddingFailures.Load())
	sum := time.Duration(m.latencyNanos.Load()).Seconds()
	buckets := make(map[float64]uint64, len(latencyBuckets))
	var cum uint64
	for i, le := range latencyBuckets {
		cum += uint64(m.buckets[i].Load())
		buckets[le] = cum
	}
	// Enrichments longer than the last bound are in the count only (the
	// +Inf bucket).
	observed := uint64(m.observed.Load())
	ch <- prometheus.MustNewConstHistogram(descLatency, max(observed, cum), sum, buckets)
	avg := 0.0
	if observed > 0 {
		avg = sum / float64(observed)
	}
	gauge(descAvg, avg)
	gauge(descMax, time.Duration(m.maxLatencyNanos.Load()).Seconds())
	deg := 0.0
	if m.Degraded() != "" {
		deg = 1
	}
	gauge(descDegraded, deg)
}
