package trace

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/h4r/h4r"
)

// Store keeps items (sources/sqlite.Store, sources/postgres.Store).
type Store interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Delete(ctx context.Context, id string) error
	Each(ctx context.Context, fn func(*h4r.Item) error) error
}

// Publisher sends an event on a subject (a NATS connection).
type Publisher interface {
	Publish(subject string, data []byte) error
}

// DefaultSummaryTimeout bounds a summary call, so that a slow model delays
// an ingest only this long before the fallback summary is used.
const DefaultSummaryTimeout = 5 * time.Second

// Service ingests traces, applies outcomes and answers queries. It is safe
// for concurrent use.
type Service struct {
	store          Store
	summarizer     Summarizer // nil: the fallback summary
	summaryTimeout time.Duration
	metrics        *Metrics
	tracer         trace.Tracer
	log            *slog.Logger
	now            func() time.Time
	publisher      Publisher // nil: outcomes are not published
	landedSubject  string
	runner         Runner // nil: no search
	limiter        webhookLimiter
	slicer         Slicer // nil: no reads
}

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithSummarizer sets the model that writes missing summaries.
func WithSummarizer(s Summarizer) ServiceOption { return func(v *Service) { v.summarizer = s } }

// WithSummaryTimeout sets the deadline of one summary call.
func WithSummaryTimeout(d time.Duration) ServiceOption {
	return func(v *Service) { v.summaryTimeout = d }
}

// WithMetrics records ingests and searches in m.
func WithMetrics(m *Metrics) ServiceOption { return func(v *Service) { v.metrics = m } }

// WithTracerProvider sets where spans go (default: none).
func WithTracerProvider(tp trace.TracerProvider) ServiceOption {
	return func(v *Service) { v.tracer = tp.Tracer("github.com/h4r/h4r/trace") }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) ServiceOption { return func(v *Service) { v.log = l } }

// WithClock sets the clock of created_at, updated_at and rate limits.
func WithClock(now func() time.Time) ServiceOption { return func(v *Service) { v.now = now } }

// WithLandedPublisher publishes every outcome applied by a webhook on
// subject (the document's buckley.event.landed).
func WithLandedPublisher(p Publisher, subject string) ServiceOption {
	return func(v *Service) { v.publisher, v.landedSubject = p, subject }
}

// WithSearch sets the engine search runs on and the slicer that trace
// reads pass through.
func WithSearch(r Runner, s Slicer) ServiceOption {
	return func(v *Service) { v.runner, v.slicer = r, s }
}

// NewService returns a Service over store.
func NewService(store Store, opts ...ServiceOption) *Service {
	s := &Service{
		store: store, summaryTimeout: DefaultSummaryTimeout,
		tracer: noop.NewTracerProvider().Tracer(""), log: slog.Default(), now: time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Ingest stores a trace: it normalizes and validates it (an invalid trace
// is an invalid_argument *h4r.Error naming the field), writes a summary
// when it has none, and upserts its item and its decisions' items. The
// same (repo, sha) again updates the one trace: created_at is kept, and
// so is an outcome a webhook already recorded (a republished trace does
// not turn a landed commit back to pending). It returns the trace stored.
func (s *Service) Ingest(ctx context.Context, t *CommitTrace) (_ *CommitTrace, err error) {
	ctx, span := s.tracer.Start(ctx, "trace.ingest")
	defer func() { endSpan(span, err) }()
	t.Normalize()
	if err := t.Validate(); err != nil {
		return nil, err
	}
	id := ItemID(t.Repo, t.SHA)
	span.SetAttributes(attribute.String("h4r.trace.id", id), attribute.Int("h4r.trace.decisions", len(t.Decisions)))
	prev, err := s.stored(ctx, id)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	t.CreatedAt, t.UpdatedAt = now, now
	staleFrom := len(t.Decisions)
	var previousDecisions int
	if prev != nil {
		t.CreatedAt = prev.CreatedAt
		previousDecisions = len(prev.Decisions)
		if t.ID == "" {
			t.ID = prev.ID
		}
		if prev.Status != StatusPending && t.Status == StatusPending {
			t.Status, t.LandedAt, t.MergedVia, t.RevertedBy = prev.Status, prev.LandedAt, prev.MergedVia, prev.RevertedBy
		}
	}
	if t.Summary == "" {
		t.Summary = s.summarize(ctx, t)
	}
	items, err := Items(t)
	if err != nil {
		return nil, err
	}
	if err := s.upsert(ctx, items); err != nil {
		return nil, err
	}
	// Decisions the new version no longer has: after the upsert, so that a
	// failure leaves extra decision items (removed on the next ingest)
	// rather than a trace without them.
	for i := staleFrom; i < previousDecisions; i++ {
		if err := s.store.Delete(ctx, DecisionItemID(id, i)); err != nil && h4r.ErrorCode(err) != h4r.ENOTFOUND {
			return nil, fmt.Errorf("deleting decision %d that trace %s no longer has: %w", i, id, err)
		}
	}
	s.metrics.traceIngested(t)
	return t, nil
}

// stored returns the stored trace of an item id, or nil when there is none.
func (s *Service) stored(ctx context.Context, id string) (*CommitTrace, error) {
	it, err := s.store.Get(ctx, id)
	if h4r.ErrorCode(err) == h4r.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading trace %s: %w", id, err)
	}
	if it.Kind != KindTrace {
		return nil, h4r.Errorf(h4r.EINVALID, "sha", "item %s exists and is of kind %q, not a commit trace", id, it.Kind)
	}
	return FromItem(it)
}

func (s *Service) upsert(ctx context.Context, items []h4r.Item) (err error) {
	ctx, span := s.tracer.Start(ctx, "store.upsert", trace.WithAttributes(attribute.Int("h4r.items", len(items))))
	defer func() { endSpan(span, err) }()
	if _, err := s.store.Upsert(ctx, items); err != nil {
		return fmt.Errorf("storing trace %s: %w", items[0].ID, err)
	}
	return nil
}

// summarize asks the summarizer, and falls back to the document's
// summary when there is none or it fails: a summary never fails an ingest.
func (s *Service) summarize(ctx context.Context, t *CommitTrace) string {
	if s.summarizer == nil {
		return FallbackSummary(t)
	}
	ctx, span := s.tracer.Start(ctx, "trace.summarize")
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, s.summaryTimeout)
	defer cancel()
	sum, err := s.summarizer.Summarize(ctx, t)
	if err != nil {
		span.RecordError(err)
		s.log.WarnContext(ctx, "the trace summary failed; using the fallback summary", "repo", t.Repo, "sha", t.SHA, "error", err)
		return FallbackSummary(t)
	}
	if len(sum) > h4r.MaxTextBytes {
		sum = strings.ToValidUTF8(sum[:h4r.MaxTextBytes], "")
	}
	return sum
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
