package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/h4r/h4r"
)

// Store keeps items (store/sqlite.Store, store/postgres.Store).
type Store interface {
	Upsert(ctx context.Context, items []h4r.Item) ([]string, error)
	// ReplaceIf writes items and deletes ids only if check holds in the
	// write's transaction (h4r.ErrVersionConflict otherwise).
	ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) ([]string, error)
	Get(ctx context.Context, id string) (*h4r.Item, error)
	Delete(ctx context.Context, id string) error
	Each(ctx context.Context, fn func(*h4r.Item) error) error
	// Find answers metadata queries in the store (by repo, branch and
	// status), so that a webhook never reads every item.
	Find(ctx context.Context, q h4r.ItemQuery) ([]*h4r.Item, error)
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
	slicer         Slicer // nil: no reads
	deliveryTTL    time.Duration
	outcomeTTL     time.Duration // of an outcome recorded before its trace
	landing        []string      // branches besides the default whose merges land
	decisionPub    Publisher     // nil: decisions are not fanned out
	decisionSubj   string
	pruneMu        sync.Mutex
	lastPrune      time.Time // of the delivery records (deliveries.go)
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

// WithLandingBranches adds branches whose merges and pushes land traces,
// besides each repository's default branch.
func WithLandingBranches(branches ...string) ServiceOption {
	return func(v *Service) { v.landing = slices.Clone(branches) }
}

// WithDecisionPublisher publishes each decision of every stored trace on
// subject (the optional fan-out of individual decisions); an empty
// subject publishes nothing.
func WithDecisionPublisher(p Publisher, subject string) ServiceOption {
	return func(v *Service) {
		if subject != "" {
			v.decisionPub, v.decisionSubj = p, subject
		}
	}
}

// NewService returns a Service over store.
func NewService(store Store, opts ...ServiceOption) *Service {
	s := &Service{
		store: store, summaryTimeout: DefaultSummaryTimeout, deliveryTTL: DefaultDeliveryTTL, outcomeTTL: DefaultEarlyOutcomeTTL,
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
	summarized := t.Summary != ""
	given := *t
	early, err := s.earlyOutcome(ctx, t.Repo, t.SHA)
	if err != nil {
		return nil, err
	}
	var stored *CommitTrace
	// A read-modify-write of the trace (created_at and a recorded outcome
	// are kept), made atomic by writing only if the trace is still at the
	// version read: a webhook outcome applied meanwhile makes the write
	// fail, and the merge runs again on what it wrote.
	err = s.atomically(ctx, id, func(prev *CommitTrace) ([]h4r.Item, []string, error) {
		t := given
		t.Decisions = slices.Clone(given.Decisions)
		now := s.now().UTC()
		t.CreatedAt, t.UpdatedAt = now, now
		var stale []string
		if prev != nil {
			t.CreatedAt = prev.CreatedAt
			if t.ID == "" {
				t.ID = prev.ID
			}
			if prev.Status != StatusPending && t.Status == StatusPending {
				t.Status, t.LandedAt, t.MergedVia, t.RevertedBy = prev.Status, prev.LandedAt, prev.MergedVia, prev.RevertedBy
			}
			// Decisions the new version no longer has go in the same
			// transaction.
			for i := len(t.Decisions); i < len(prev.Decisions); i++ {
				stale = append(stale, DecisionItemID(id, i))
			}
		}
		if early != nil {
			applyOutcome(&t, *early)
		}
		if !summarized && t.Summary == "" {
			t.Summary = s.summarize(ctx, &t)
			given.Summary = t.Summary // summarized once, whatever the retries
		}
		items, err := Items(&t)
		if err != nil {
			return nil, nil, err
		}
		stored = &t
		return items, stale, nil
	})
	if err != nil {
		return nil, err
	}
	s.metrics.traceIngested(stored)
	if early != nil {
		// The outcome now lives on the trace.
		if err := s.store.Delete(ctx, EarlyOutcomeItemID(stored.Repo, stored.SHA)); err != nil && h4r.ErrorCode(err) != h4r.ENOTFOUND {
			s.log.WarnContext(ctx, "deleting an outcome recorded before its trace", "repo", stored.Repo, "sha", stored.SHA, "error", err)
		}
		if stored.Status != StatusPending {
			s.publishLanded(ctx, stored)
		}
	}
	s.publishDecisions(ctx, stored)
	return stored, nil
}

// maxWriteAttempts bounds the retries of a trace's read-modify-write when
// other writers keep changing it.
const maxWriteAttempts = 8

// atomically reads the trace of item id (nil when there is none), lets
// change build the items to write and the ids to delete from it, and
// writes them only if the trace is still at the version read; when another
// writer came between, it reads and builds again. change may return no
// items to write nothing.
func (s *Service) atomically(ctx context.Context, id string, change func(prev *CommitTrace) ([]h4r.Item, []string, error)) error {
	for attempt := 1; ; attempt++ {
		prev, version, err := s.storedVersion(ctx, id)
		if err != nil {
			return err
		}
		items, deletes, err := change(prev)
		if err != nil || len(items) == 0 {
			return err
		}
		err = s.replaceIf(ctx, h4r.VersionCheck{ID: id, Version: version}, items, deletes)
		if !errors.Is(err, h4r.ErrVersionConflict) {
			return err
		}
		if attempt == maxWriteAttempts {
			return h4r.Errorf(h4r.EUNAVAILABLE, "", "trace %s kept changing while it was written (%d attempts); retry", id, attempt)
		}
	}
}

// storedVersion returns the stored trace of an item id and the item's
// version, or nil and 0 when there is none.
func (s *Service) storedVersion(ctx context.Context, id string) (*CommitTrace, int, error) {
	it, err := s.store.Get(ctx, id)
	if h4r.ErrorCode(err) == h4r.ENOTFOUND {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("reading trace %s: %w", id, err)
	}
	if it.Kind != KindTrace {
		return nil, 0, h4r.Errorf(h4r.EINVALID, "sha", "item %s exists and is of kind %q, not a commit trace", id, it.Kind)
	}
	t, err := FromItem(it)
	return t, it.Metadata.Version, err
}

// replaceIf writes a trace's items (and deletes its stale decisions) if
// check holds.
func (s *Service) replaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) (err error) {
	ctx, span := s.tracer.Start(ctx, "store.upsert", trace.WithAttributes(attribute.Int("h4r.items", len(items))))
	defer func() {
		if errors.Is(err, h4r.ErrVersionConflict) {
			span.SetAttributes(attribute.Bool("h4r.version_conflict", true))
			span.End()
			return
		}
		endSpan(span, err)
	}()
	if _, err := s.store.ReplaceIf(ctx, check, items, deletes); err != nil {
		return fmt.Errorf("storing trace %s: %w", check.ID, err)
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
