package app

import (
	"context"
	"errors"
	"log/slog"

	"github.com/nats-io/nats.go"

	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/telemetry"
	"github.com/h4r/h4r/trace"
)

// Traces is the commit-trace side of the service: the trace service over
// the store and engine, and, when NATS_URL is set, the NATS connection and
// the durable consumer.
type Traces struct {
	Service  *trace.Service
	Consumer *trace.Consumer // nil without NATS_URL
	NATS     *nats.Conn      // nil without NATS_URL
	// Fanout carries the ids of ingested items to every replica's ambient
	// hub (decision.NewHub's fanout); nil without NATS_URL, where the hub
	// keeps them in the process. The consumer publishes there as the
	// HTTP ingest does.
	Fanout   decision.Fanout
	shutdown func(context.Context) error
}

// OpenTraces wires the trace service, its metrics, its spans
// (exported when OTEL_EXPORTER_OTLP_ENDPOINT is set) and, with NATS_URL,
// the NATS connection and the consumer (not started: Start). m may be nil.
func OpenTraces(ctx context.Context, a *App, m *trace.Metrics, log *slog.Logger) (*Traces, error) {
	cfg := a.Config
	tp, shutdown, err := telemetry.Tracing(ctx, cfg.OTLPEndpoint, "h4r")
	if err != nil {
		return nil, err
	}
	opts := []trace.ServiceOption{
		trace.WithMetrics(m), trace.WithTracerProvider(tp), trace.WithLogger(log),
		trace.WithSearch(a.Engine, a.Slicer), trace.WithSummaryTimeout(cfg.SummaryTimeout),
		trace.WithLandingBranches(config.Branches(cfg.LandingBranches)...),
	}
	if cfg.SummaryURL != "" {
		opts = append(opts, trace.WithSummarizer(trace.NewChatSummarizer(cfg.SummaryURL, cfg.SummaryModel, cfg.SummaryAPIKey, cfg.SummaryTimeout)))
	}
	t := &Traces{shutdown: shutdown}
	if cfg.NATSURL != "" {
		if t.NATS, err = trace.ConnectNATS(cfg.NATSURL, cfg.NATSCreds, log); err != nil {
			return nil, errors.Join(err, shutdown(ctx))
		}
		opts = append(opts, trace.WithLandedPublisher(t.NATS, cfg.LandedSubject), trace.WithDecisionPublisher(t.NATS, cfg.DecisionSubject))
	}
	t.Service = trace.NewService(a.Store, opts...)
	if t.NATS != nil {
		t.Fanout = decision.NewNATSFanout(t.NATS, fanoutSubject(cfg.Tenant))
		t.Consumer, err = trace.NewConsumer(t.NATS, t.Service, trace.ConsumerConfig{
			Stream: cfg.TraceStream, Subject: cfg.TraceSubject, Durable: cfg.TraceDurable, DeadLetter: cfg.TraceDeadLetter,
		}, trace.WithConsumerLogger(log), trace.WithConsumerMetrics(m), trace.WithConsumerTracerProvider(tp),
			trace.WithIngestedPublisher(t.Fanout))
		if err != nil {
			return nil, errors.Join(err, t.Close(ctx))
		}
	}
	return t, nil
}

// Start starts the consumer, or logs that there is none.
func (t *Traces) Start(ctx context.Context, log *slog.Logger) error {
	if t.Consumer == nil {
		log.InfoContext(ctx, "commit trace consumer skipped: NATS_URL is not set (traces can still be sent to POST /v1/traces)")
		return nil
	}
	return t.Consumer.Start(ctx)
}

// Close stops the consumer (unacknowledged messages go to another
// replica), drains the NATS connection and flushes spans.
func (t *Traces) Close(ctx context.Context) error {
	if t.Consumer != nil {
		t.Consumer.Stop()
	}
	var errs []error
	if t.NATS != nil {
		errs = append(errs, t.NATS.Drain())
	}
	errs = append(errs, t.shutdown(ctx))
	return errors.Join(errs...)
}

// fanoutSubject is where a tenant's replicas tell each other of ingested
// items: the default tenant's is the default subject, another tenant's a
// subject of its own, so that no hub hears of another tenant's items.
func fanoutSubject(tenant string) string {
	if tenant == "" || tenant == "default" {
		return decision.DefaultFanoutSubject
	}
	return decision.DefaultFanoutSubject + "." + tenant
}
