package trace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/h4r/h4r"
)

// Defaults of the consumer: the document's subjects, and H4R's stream and
// durable names.
const (
	DefaultTraceSubject  = "buckley.trace.commit"
	DefaultLandedSubject = "buckley.event.landed"
	// DefaultDeadLetterSubject receives the messages that cannot be
	// stored, with their reason in headers, for an operator to replay.
	DefaultDeadLetterSubject = "buckley.trace.dead_letter"
	DefaultStream            = "H4R_TRACES"
	DefaultDurable           = "h4r-traces"
	DefaultAckWait           = 30 * time.Second
	// maxNakDelay caps the backoff of a trace the store could not take.
	maxNakDelay = time.Minute
)

// Ingester stores a trace (Service).
type Ingester interface {
	Ingest(ctx context.Context, t *CommitTrace) (*CommitTrace, error)
}

// IngestedPublisher tells the ambient hubs of every replica which items
// were written (decision.Fanout: decision.Hub.Ingested publishes there).
type IngestedPublisher interface {
	Publish(ctx context.Context, ids []string) error
}

// ConsumerConfig names what the consumer reads.
type ConsumerConfig struct {
	Stream  string        // created with Subject when missing
	Subject string        // the traces' subject
	Durable string        // shared by every replica: each message goes to one
	AckWait time.Duration // redelivery after this long without an ack
	// DeadLetter is where a message that cannot be stored goes, with
	// its reason; "" drops it (logged and counted).
	DeadLetter string
}

// Headers of a dead-lettered message.
const (
	HeaderDeadReason  = "H4R-Dead-Letter-Reason"
	HeaderDeadField   = "H4R-Dead-Letter-Field"
	HeaderDeadError   = "H4R-Dead-Letter-Error"
	HeaderDeadSubject = "H4R-Dead-Letter-Subject"
	HeaderDeadSeq     = "H4R-Dead-Letter-Stream-Sequence"
)

// maxLoggedFields bounds the unknown field names remembered for logging
// once each, so that a stream of invented names cannot grow memory.
const maxLoggedFields = 256

// Consumer is the durable JetStream consumer of commit traces. Replicas
// share its durable name, so JetStream hands each message to one of them;
// a message is acknowledged only after the store committed its trace, so
// a crash before the ack redelivers it, and the upsert by (repo, sha)
// leaves one copy.
type Consumer struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	cfg     ConsumerConfig
	ingest  Ingester
	metrics *Metrics
	log     *slog.Logger
	tracer  trace.Tracer
	prop    propagation.TextMapPropagator
	// ingested hears of each stored trace, as POST /v1/traces tells the
	// ambient hub; nil: nobody.
	ingested IngestedPublisher

	mu         sync.Mutex
	cc         jetstream.ConsumeContext
	loggedKeys map[string]bool // unknown fields already logged
	afterStore func()          // tests: between the store write and the ack
}

// ConsumerOption configures a Consumer.
type ConsumerOption func(*Consumer)

// WithConsumerLogger sets the consumer's logger.
func WithConsumerLogger(l *slog.Logger) ConsumerOption { return func(c *Consumer) { c.log = l } }

// WithConsumerMetrics counts rejected messages in m.
func WithConsumerMetrics(m *Metrics) ConsumerOption { return func(c *Consumer) { c.metrics = m } }

// WithConsumerTracerProvider sets where the consumer's spans go; their
// parent is the trace context of the message's headers (W3C traceparent).
func WithConsumerTracerProvider(tp trace.TracerProvider) ConsumerOption {
	return func(c *Consumer) { c.tracer = tp.Tracer("github.com/h4r/h4r/trace") }
}

// WithIngestedPublisher tells p of every trace stored from NATS (its item
// id), after the ack, so that ambient subscribers hear of traces that came
// over NATS as of those POSTed to /v1/traces.
func WithIngestedPublisher(p IngestedPublisher) ConsumerOption {
	return func(c *Consumer) { c.ingested = p }
}

// NewConsumer returns a consumer of cfg over nc; Start begins consuming.
func NewConsumer(nc *nats.Conn, ingest Ingester, cfg ConsumerConfig, opts ...ConsumerOption) (*Consumer, error) {
	if cfg.Stream == "" {
		cfg.Stream = DefaultStream
	}
	if cfg.Subject == "" {
		cfg.Subject = DefaultTraceSubject
	}
	if cfg.Durable == "" {
		cfg.Durable = DefaultDurable
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = DefaultAckWait
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("opening JetStream: %w", err)
	}
	c := &Consumer{
		nc: nc, js: js, cfg: cfg, ingest: ingest, log: slog.Default(), loggedKeys: map[string]bool{},
		tracer: noop.NewTracerProvider().Tracer(""),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Start opens the stream and the durable consumer, and consumes until
// Stop. The stream is the one named by the configuration; when there is
// none, a stream an operator made that already stores the subject is used
// (JetStream refuses two streams over one subject); when there is none
// either, the stream is created over the subject and the dead-letter
// subject.
func (c *Consumer) Start(ctx context.Context) error {
	stream, err := c.openStream(ctx)
	if err != nil {
		return err
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       c.cfg.Durable,
		FilterSubject: c.cfg.Subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.cfg.AckWait,
		MaxDeliver:    -1, // a store outage must not drop traces
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Description:   "H4R commit trace ingestion",
	})
	if err != nil {
		return fmt.Errorf("creating consumer %s on stream %s (subject %s): %w", c.cfg.Durable, stream.CachedInfo().Config.Name, c.cfg.Subject, err)
	}
	cc, err := cons.Consume(c.handle, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		c.log.Warn("consuming commit traces", "stream", c.cfg.Stream, "error", err)
	}))
	if err != nil {
		return fmt.Errorf("consuming %s: %w", c.cfg.Subject, err)
	}
	c.mu.Lock()
	c.cc = cc
	c.mu.Unlock()
	c.log.InfoContext(ctx, "consuming commit traces", "subject", c.cfg.Subject, "stream", stream.CachedInfo().Config.Name, "durable", c.cfg.Durable)
	return nil
}

// openStream finds or creates the stream of the traces' subject.
func (c *Consumer) openStream(ctx context.Context) (jetstream.Stream, error) {
	stream, err := c.js.Stream(ctx, c.cfg.Stream)
	if err == nil {
		return stream, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("opening stream %s: %w", c.cfg.Stream, err)
	}
	if name, err := c.js.StreamNameBySubject(ctx, c.cfg.Subject); err == nil {
		c.log.InfoContext(ctx, "stream "+c.cfg.Stream+" does not exist; using the stream that already stores the traces' subject (set H4R_TRACE_STREAM to its name to say so)", "stream", name, "subject", c.cfg.Subject)
		if stream, err = c.js.Stream(ctx, name); err != nil {
			return nil, fmt.Errorf("opening stream %s, which stores %s: %w", name, c.cfg.Subject, err)
		}
		return stream, nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("looking for a stream that stores %s: %w", c.cfg.Subject, err)
	}
	subjects := []string{c.cfg.Subject}
	if d := c.cfg.DeadLetter; d != "" && d != c.cfg.Subject {
		// Unless another stream stores it already: two streams may not
		// share a subject.
		if _, err := c.js.StreamNameBySubject(ctx, d); errors.Is(err, jetstream.ErrStreamNotFound) {
			subjects = append(subjects, d)
		}
	}
	stream, err = c.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: c.cfg.Stream, Subjects: subjects, Storage: jetstream.FileStorage,
		Description: "Commit traces consumed by H4R",
	})
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // another replica created it first
		stream, err = c.js.Stream(ctx, c.cfg.Stream)
	}
	if err != nil {
		return nil, fmt.Errorf("creating stream %s over %s (an existing stream that stores one of these subjects is used when it stores %s; otherwise set H4R_TRACE_STREAM to its name): %w", c.cfg.Stream, strings.Join(subjects, ", "), c.cfg.Subject, err)
	}
	c.log.InfoContext(ctx, "created the JetStream stream of commit traces", "stream", c.cfg.Stream, "subjects", subjects)
	return stream, nil
}

// Stop stops consuming; a message being handled is finished, and any
// message not acknowledged is redelivered to another replica.
func (c *Consumer) Stop() {
	c.mu.Lock()
	cc := c.cc
	c.cc = nil
	c.mu.Unlock()
	if cc != nil {
		cc.Drain()
		<-cc.Closed()
	}
}

// Health reports whether the connection to NATS is up.
func (c *Consumer) Health(ctx context.Context) error {
	if s := c.nc.Status(); s != nats.CONNECTED {
		return fmt.Errorf("NATS connection is %s", s)
	}
	return nil
}

// handle stores one message's trace, then acknowledges it. A message that
// is not a valid trace is acknowledged (it would fail the same way every
// time), counted and logged with its reason and field; a store failure is
// negatively acknowledged with a growing delay, so that JetStream
// redelivers it once the store is back.
func (c *Consumer) handle(msg jetstream.Msg) {
	ctx := c.prop.Extract(context.Background(), headerCarrier(msg.Headers()))
	ctx, span := c.tracer.Start(ctx, "nats.receive "+msg.Subject(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("messaging.system", "nats"), attribute.String("messaging.destination.name", msg.Subject())))
	defer span.End()
	delivered := uint64(1)
	if md, err := msg.Metadata(); err == nil {
		delivered = md.NumDelivered
		span.SetAttributes(attribute.Int64("messaging.nats.delivered", int64(delivered)), attribute.Int64("messaging.nats.stream_sequence", int64(md.Sequence.Stream)))
	}
	reason := "invalid_json" // not a trace document: syntax, wrong type
	var stored *CommitTrace
	t, unknown, err := DecodeFromBus(msg.Data())
	c.logUnknown(ctx, unknown)
	if err == nil {
		reason = "invalid_trace" // a trace that fails validation
		stored, err = c.ingest.Ingest(ctx, t)
	}
	if h4r.ErrorCode(err) == h4r.EINVALID {
		var field string
		var herr *h4r.Error
		if errors.As(err, &herr) {
			field = herr.Field
		}
		span.RecordError(err)
		if derr := c.deadLetter(ctx, msg, reason, field, err); derr != nil {
			// Not acknowledged: the message stays on the stream until the
			// dead-letter subject takes it.
			c.log.WarnContext(ctx, "dead-lettering a commit trace that cannot be stored failed; it will be redelivered", "reason", reason, "dead_letter", c.cfg.DeadLetter, "error", derr)
			if nerr := msg.NakWithDelay(nakDelay(delivered)); nerr != nil {
				c.log.WarnContext(ctx, "negatively acknowledging a trace", "error", nerr)
			}
			return
		}
		c.metrics.rejectedMessage(reason)
		// The field and the message quote the message's own keys: clipped,
		// so that a crafted message cannot write a log line of its size.
		c.log.WarnContext(ctx, "acknowledged a commit trace that cannot be stored", "reason", reason, "field", clip(field), "error", clip(h4r.ErrorMessage(err)), "subject", msg.Subject(), "delivered", delivered, "dead_letter", c.cfg.DeadLetter)
		if aerr := msg.Ack(); aerr != nil {
			c.log.WarnContext(ctx, "acknowledging a rejected trace", "error", aerr)
		}
		return
	}
	if err != nil {
		delay := nakDelay(delivered)
		endSpan(span, err)
		c.log.WarnContext(ctx, "storing a commit trace failed; it will be redelivered", "error", err, "delivered", delivered, "retry_in", delay)
		if nerr := msg.NakWithDelay(delay); nerr != nil {
			c.log.WarnContext(ctx, "negatively acknowledging a trace", "error", nerr)
		}
		return
	}
	if c.afterStore != nil {
		c.afterStore()
	}
	// DoubleAck waits for the server to confirm the ack, so that a trace
	// counted as consumed is not redelivered unless the ack was lost.
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := msg.DoubleAck(actx); err != nil {
		c.log.WarnContext(ctx, "acknowledging a stored trace failed; its redelivery will update the same trace", "error", err)
	}
	if c.ingested != nil && stored != nil {
		if err := c.ingested.Publish(ctx, []string{ItemID(stored.Repo, stored.SHA)}); err != nil {
			c.log.WarnContext(ctx, "telling ambient subscribers of a trace from NATS failed; they miss it", "error", err)
		}
	}
}

// logUnknown logs each unknown field name once per consumer.
func (c *Consumer) logUnknown(ctx context.Context, names []string) {
	for _, n := range names {
		c.mu.Lock()
		first := !c.loggedKeys[n] && len(c.loggedKeys) < maxLoggedFields
		if first {
			c.loggedKeys[n] = true
		}
		c.mu.Unlock()
		if first {
			c.log.InfoContext(ctx, "commit traces carry a field this version does not know; it is not stored (logged once per field)", "field", clip(n))
		}
	}
}

// deadLetter publishes a message that cannot be stored on the dead-letter
// subject with its reason, field and error in headers. With JetStream
// storing the subject the publish is acknowledged; with none, it is sent
// on plain NATS (logged), as a subscriber may still take it.
func (c *Consumer) deadLetter(ctx context.Context, msg jetstream.Msg, reason, field string, cause error) error {
	if c.cfg.DeadLetter == "" {
		return nil
	}
	h := nats.Header{}
	for k, v := range msg.Headers() {
		h[k] = slices.Clone(v)
	}
	h.Set(HeaderDeadReason, reason)
	h.Set(HeaderDeadField, clip(field))
	h.Set(HeaderDeadError, clip(h4r.ErrorMessage(cause)))
	h.Set(HeaderDeadSubject, msg.Subject())
	if md, err := msg.Metadata(); err == nil {
		h.Set(HeaderDeadSeq, strconv.FormatUint(md.Sequence.Stream, 10))
	}
	out := &nats.Msg{Subject: c.cfg.DeadLetter, Header: h, Data: msg.Data()}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := c.js.PublishMsg(pctx, out)
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		c.log.WarnContext(ctx, "no JetStream stream stores the dead-letter subject; the message was published without persistence", "dead_letter", c.cfg.DeadLetter)
		err = c.nc.PublishMsg(out)
	}
	if err != nil {
		return fmt.Errorf("publishing on %s: %w", c.cfg.DeadLetter, err)
	}
	c.metrics.deadLettered(reason)
	return nil
}

// nakDelay is the backoff of the n-th delivery: 1 s, 2 s, 4 s, … up to a
// minute.
func nakDelay(delivered uint64) time.Duration {
	if delivered > 7 {
		return maxNakDelay
	}
	return min(time.Second<<(delivered-1), maxNakDelay)
}

// headerCarrier reads and writes W3C trace context in NATS headers, with
// keys matched whatever their case (publishers write "traceparent" or
// "Traceparent").
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string {
	for k, v := range h {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (h headerCarrier) Set(key, value string) { nats.Header(h).Set(key, value) }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// InjectTraceContext writes ctx's trace context into NATS headers, for
// publishers (the client package).
func InjectTraceContext(ctx context.Context, h nats.Header) {
	propagation.TraceContext{}.Inject(ctx, headerCarrier(h))
}

// ConnectNATS connects to url with the credentials file creds (empty:
// none), reconnecting without end.
func ConnectNATS(url, creds string, log *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name("h4r"), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("disconnected from NATS", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("reconnected to NATS", "url", nc.ConnectedUrlRedacted()) }),
	}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w", url, err)
	}
	return nc, nil
}
