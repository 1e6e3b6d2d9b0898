package trace

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the document's metrics, and H4R's counts of what it refused.
// A nil *Metrics records nothing.
type Metrics struct {
	ingested   *prometheus.CounterVec
	decisions  prometheus.Counter
	search     *prometheus.HistogramVec
	embedding  prometheus.Histogram
	rejected   *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	dead       *prometheus.CounterVec
}

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "context_traces_ingested_total", Help: "Total traces ingested",
		}, []string{"repo", "mode", "status"}),
		decisions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "context_decisions_extracted_total", Help: "Total decisions extracted from traces",
		}),
		search: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "context_search_duration_seconds", Help: "Search request latency",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1},
		}, []string{"endpoint"}),
		embedding: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "context_embedding_duration_seconds", Help: "Embedding generation latency",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5},
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_traces_rejected_total", Help: "Trace messages acknowledged without storing, by reason (invalid_json, invalid_trace)",
		}, []string{"reason"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_github_webhooks_total", Help: "GitHub webhook deliveries by event and result (applied, duplicate, ignored, refused)",
		}, []string{"event", "result"}),
		dead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "h4r_traces_dead_lettered_total", Help: "Trace messages put on the dead-letter subject, by reason (invalid_json, invalid_trace)",
		}, []string{"reason"}),
	}
	reg.MustRegister(m.ingested, m.decisions, m.search, m.embedding, m.rejected, m.deliveries, m.dead)
	return m
}

func (m *Metrics) traceIngested(t *CommitTrace) {
	if m == nil {
		return
	}
	m.ingested.WithLabelValues(t.Repo, string(t.Mode), string(t.Status)).Inc()
	m.decisions.Add(float64(len(t.Decisions)))
}

// ObserveSearch records one search endpoint's latency.
func (m *Metrics) ObserveSearch(endpoint string, d time.Duration) {
	if m == nil {
		return
	}
	m.search.WithLabelValues(endpoint).Observe(d.Seconds())
}

// ObserveEmbedding records one embedding's latency (app wraps the
// embedder with it).
func (m *Metrics) ObserveEmbedding(d time.Duration) {
	if m == nil {
		return
	}
	m.embedding.Observe(d.Seconds())
}

func (m *Metrics) rejectedMessage(reason string) {
	if m == nil {
		return
	}
	m.rejected.WithLabelValues(reason).Inc()
}

func (m *Metrics) delivery(event, result string) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(event, result).Inc()
}

// Rejected is the counter of messages rejected for reason (tests read it).
func (m *Metrics) Rejected(reason string) prometheus.Counter {
	return m.rejected.WithLabelValues(reason)
}

func (m *Metrics) deadLettered(reason string) {
	if m == nil {
		return
	}
	m.dead.WithLabelValues(reason).Inc()
}

// DeadLettered is the counter of messages dead-lettered for reason.
func (m *Metrics) DeadLettered(reason string) prometheus.Counter {
	return m.dead.WithLabelValues(reason)
}
