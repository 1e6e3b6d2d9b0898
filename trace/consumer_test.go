package trace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/natstest"
	"github.com/h4r/h4r/internal/pgtest"
	"github.com/h4r/h4r/store/postgres"
	"github.com/h4r/h4r/trace"
)

// natsSetup is a stream and subject of the test's own on the test server.
type natsSetup struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	cfg trace.ConsumerConfig
}

func newNATS(t *testing.T) *natsSetup {
	t.Helper()
	nc := natstest.Connect(t)
	stream, prefix := natstest.Names(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = js.DeleteStream(ctx, stream)
	})
	// The ack wait is long enough that a slow ingest on a loaded machine
	// is not redelivered to the other replica; the kill test shortens it.
	return &natsSetup{nc: nc, js: js, cfg: trace.ConsumerConfig{Stream: stream, Subject: prefix + ".trace.commit", Durable: "h4r-traces", AckWait: time.Minute}}
}

func (n *natsSetup) publish(t testing.TB, body []byte, header nats.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := n.js.PublishMsg(ctx, &nats.Msg{Subject: n.cfg.Subject, Data: body, Header: header}); err != nil {
		t.Fatal(err)
	}
}

func (n *natsSetup) start(t testing.TB, ing trace.Ingester, opts ...trace.ConsumerOption) *trace.Consumer {
	t.Helper()
	opts = append([]trace.ConsumerOption{trace.WithConsumerLogger(quiet)}, opts...)
	c, err := trace.NewConsumer(n.nc, ing, n.cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// settled waits until the durable consumer has nothing pending and nothing
// unacknowledged, and returns its info.
func (n *natsSetup) settled(t testing.TB) *jetstream.ConsumerInfo {
	t.Helper()
	var info *jetstream.ConsumerInfo
	eventually(t, 3*time.Minute, func() bool { // loaded 2-core machines under -race
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := n.js.Consumer(ctx, n.cfg.Stream, n.cfg.Durable)
		if err != nil {
			return false
		}
		info, err = c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	}, "the consumer acknowledged every message")
	return info
}

func eventually(t testing.TB, within time.Duration, ok func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func traceJSON(t testing.TB, change func(*trace.CommitTrace)) []byte {
	t.Helper()
	tr := fixture(t)
	if change != nil {
		change(tr)
	}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countingIngester counts the traces an ingester stored.
type countingIngester struct {
	trace.Ingester
	stored atomic.Int64
}

func (c *countingIngester) Ingest(ctx context.Context, t *trace.CommitTrace) (*trace.CommitTrace, error) {
	out, err := c.Ingester.Ingest(ctx, t)
	if err == nil {
		c.stored.Add(1)
	}
	return out, err
}

func TestConsumerStoresAndSkipsPoisonMessages(t *testing.T) {
	n := newNATS(t)
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	m := trace.NewMetrics(reg)
	// The stream does not exist yet: Start creates it.
	ctx := context.Background()
	if _, err := n.js.Stream(ctx, n.cfg.Stream); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("the stream exists before Start: %v", err)
	}
	n.start(t, h.svc, trace.WithConsumerMetrics(m))
	n.publish(t, []byte(`{"sha": "abc`), nil)                                                                        // not JSON
	n.publish(t, []byte(`{"sha": "abcdef1", "repo": "a/b", "timestamp": "2026-11-20T00:00:00Z", "colour": 1}`), nil) // unknown field: stored
	n.publish(t, traceJSON(t, func(c *trace.CommitTrace) { c.Decisions[0].Selected = 7 }), nil)                      // invalid trace
	n.publish(t, traceJSON(t, nil), nil)                                                                             // valid, after the poison
	info := n.settled(t)
	if info.Delivered.Stream != 4 || info.NumRedelivered != 0 {
		t.Fatalf("delivered up to %d, %d redelivered: want 4 and none (poison is acked, not retried)", info.Delivered.Stream, info.NumRedelivered)
	}
	tr := fixture(t)
	if _, err := h.app.Store.Get(ctx, trace.ItemID(tr.Repo, tr.SHA)); err != nil {
		t.Fatalf("the valid trace after the poison messages was not stored: %v", err)
	}
	if _, err := h.app.Store.Get(ctx, trace.ItemID("a/b", "abcdef1")); err != nil {
		t.Fatalf("the trace with a field this version does not know was not stored: %v", err)
	}
	if got := testutil.ToFloat64(m.Rejected("invalid_json")); got != 1 {
		t.Errorf("invalid_json rejected %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.Rejected("invalid_trace")); got != 1 {
		t.Errorf("invalid_trace rejected %v, want 1", got)
	}
}

// downStore is the real store whose writes fail while down is set, as a
// store outage does.
type downStore struct {
	trace.Store
	down     atomic.Bool
	attempts atomic.Int64
}

func (s *downStore) Upsert(ctx context.Context, items []h4r.Item) ([]string, error) {
	s.attempts.Add(1)
	if s.down.Load() {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the store is down")
	}
	return s.Store.Upsert(ctx, items)
}

func (s *downStore) ReplaceIf(ctx context.Context, check h4r.VersionCheck, items []h4r.Item, deletes []string) ([]string, error) {
	s.attempts.Add(1)
	if s.down.Load() {
		return nil, h4r.Errorf(h4r.EUNAVAILABLE, "", "the store is down")
	}
	return s.Store.ReplaceIf(ctx, check, items, deletes)
}

func TestConsumerNaksWhileTheStoreIsDown(t *testing.T) {
	n := newNATS(t)
	h := newHarness(t)
	store := &downStore{Store: h.app.Store}
	store.down.Store(true)
	svc := trace.NewService(store, trace.WithClock(clock), trace.WithLogger(quiet))
	n.start(t, svc)
	n.publish(t, traceJSON(t, nil), nil)
	// Delays 1 s, then 2 s: at least two attempts within 5 s.
	eventually(t, 20*time.Second, func() bool { return store.attempts.Load() >= 2 }, "the trace was redelivered after a nak")
	store.down.Store(false)
	info := n.settled(t)
	if info.NumRedelivered != 0 && info.AckFloor.Stream != 1 {
		t.Fatalf("ack floor %d", info.AckFloor.Stream)
	}
	tr := fixture(t)
	if _, err := h.app.Store.Get(context.Background(), trace.ItemID(tr.Repo, tr.SHA)); err != nil {
		t.Fatalf("the trace was lost during the outage: %v", err)
	}
}

func TestConsumerSpansFollowTheMessageTraceContext(t *testing.T) {
	n := newNATS(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h := newHarness(t, trace.WithTracerProvider(tp))
	n.start(t, h.svc, trace.WithConsumerTracerProvider(tp))
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	n.publish(t, traceJSON(t, nil), nats.Header{"traceparent": []string{"00-" + traceID + "-" + parentID + "-01"}})
	n.settled(t)
	if _, err := h.svc.Search(context.Background(), publicReader, trace.SearchRequest{Query: "rate limiting auth"}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[strings.Fields(s.Name)[0]] = s
	}
	recv, ingest, upsert := byName["nats.receive"], byName["trace.ingest"], byName["store.upsert"]
	if recv.SpanContext.TraceID().String() != traceID || recv.Parent.SpanID().String() != parentID || !recv.Parent.IsRemote() {
		t.Fatalf("nats.receive: trace %s parent %s remote %v; want the message's %s/%s", recv.SpanContext.TraceID(), recv.Parent.SpanID(), recv.Parent.IsRemote(), traceID, parentID)
	}
	if recv.SpanKind != oteltrace.SpanKindConsumer {
		t.Errorf("nats.receive kind %v, want consumer", recv.SpanKind)
	}
	if ingest.Parent.SpanID() != recv.SpanContext.SpanID() || upsert.Parent.SpanID() != ingest.SpanContext.SpanID() || upsert.SpanContext.TraceID().String() != traceID {
		t.Fatalf("span tree: ingest's parent %s (want %s), upsert's parent %s (want %s)", ingest.Parent.SpanID(), recv.SpanContext.SpanID(), upsert.Parent.SpanID(), ingest.SpanContext.SpanID())
	}
	search, run := byName["trace.search"], byName["engine.run"]
	if run.Parent.SpanID() != search.SpanContext.SpanID() || !search.SpanContext.IsValid() {
		t.Fatalf("engine.run's parent %s, want trace.search %s", run.Parent.SpanID(), search.SpanContext.SpanID())
	}
}

// pgService is one replica: its own connection pool to the shared schema.
func pgService(t testing.TB, dsn string) (*postgres.Store, *trace.Service) {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn, postgres.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, trace.NewService(st, trace.WithClock(clock), trace.WithLogger(quiet))
}

// TestTwoReplicasIngestEachTraceOnce: two replicas on one Postgres and one
// NATS server share the durable consumer; every trace is stored exactly
// once, and a webhook sent to either replica updates the same trace (and
// is not applied again by the other).
func TestTwoReplicasIngestEachTraceOnce(t *testing.T) {
	n := newNATS(t)
	dsn := pgtest.Schema(t, "traces")
	storeA, svcA := pgService(t, dsn)
	_, svcB := pgService(t, dsn)
	a, b := &countingIngester{Ingester: svcA}, &countingIngester{Ingester: svcB}
	n.start(t, a)
	n.start(t, b)
	const traces = 40
	for i := range traces {
		n.publish(t, traceJSON(t, func(c *trace.CommitTrace) { c.SHA = fmt.Sprintf("%040x", i+1) }), nil)
	}
	n.settled(t)
	if got := a.stored.Load() + b.stored.Load(); got != traces {
		t.Fatalf("replicas stored %d + %d = %d traces, want each of %d exactly once", a.stored.Load(), b.stored.Load(), got, traces)
	}
	t.Logf("replica A stored %d, replica B %d", a.stored.Load(), b.stored.Load())
	count, err := storeA.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if count != traces*3 {
		t.Fatalf("%d items, want %d traces with 2 decisions each", count, traces*3)
	}
	body := []byte(`{"ref":"refs/heads/main","after":"` + fmt.Sprintf("%040x", 1) + `","repository":{"full_name":"acme/gateway","default_branch":"main"},"commits":[{"id":"` + fmt.Sprintf("%040x", 1) + `","message":"m","timestamp":"2026-11-21T08:00:00Z"}]}`)
	res, err := svcB.HandleGitHub(context.Background(), "push", "replica-delivery", body)
	if err != nil || res.TracesUpdated != 1 {
		t.Fatalf("replica B: %+v %v", res, err)
	}
	res, err = svcA.HandleGitHub(context.Background(), "push", "replica-delivery", body)
	if err != nil || !res.Processed || res.TracesUpdated != 0 {
		t.Fatalf("the same delivery at replica A: %+v %v, want processed with nothing updated", res, err)
	}
	it, err := storeA.Get(context.Background(), trace.ItemID("acme/gateway", fmt.Sprintf("%040x", 1)))
	if err != nil || it.Metadata.Extra["status"] != "landed" {
		t.Fatalf("replica A reads %v (%v), want the trace landed by replica B", it, err)
	}
}

const killHelperVar = "H4R_TRACE_KILL_HELPER"

// TestConsumerKilledBeforeAck: a process killed (SIGKILL) between the
// store write and the ack leaves the message unacknowledged; it is
// redelivered, and the trace is still one copy.
func TestConsumerKilledBeforeAck(t *testing.T) {
	if os.Getenv(killHelperVar) != "" {
		runKillHelper(t)
		return
	}
	n := newNATS(t)
	n.cfg.AckWait = 10 * time.Second // the helper's, so that the redelivery comes soon
	dsn := pgtest.Schema(t, "traces")
	store, svc := pgService(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.js.CreateStream(ctx, jetstream.StreamConfig{Name: n.cfg.Stream, Subjects: []string{n.cfg.Subject}}); err != nil {
		t.Fatal(err)
	}
	n.publish(t, traceJSON(t, nil), nil)

	cmd := exec.Command(os.Args[0], "-test.run=^TestConsumerKilledBeforeAck$", "-test.count=1")
	cmd.Env = append(os.Environ(), killHelperVar+"=1", "H4R_KILL_DSN="+dsn, "H4R_KILL_STREAM="+n.cfg.Stream, "H4R_KILL_SUBJECT="+n.cfg.Subject)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the helper was not killed: %v\n%s", err, out)
	}
	tr := fixture(t)
	id := trace.ItemID(tr.Repo, tr.SHA)
	first, err := store.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("the killed process did not store the trace before dying: %v", err)
	}
	c := &countingIngester{Ingester: svc}
	n.start(t, c)
	n.settled(t)
	if c.stored.Load() != 1 {
		t.Fatalf("redelivered %d times, want once", c.stored.Load())
	}
	count, _ := store.Count(context.Background())
	second, _ := store.Get(context.Background(), id)
	if count != 3 || second.Metadata.Version <= first.Metadata.Version {
		t.Fatalf("%d items (want one trace and its 2 decisions), version %d → %d (want the redelivery to update it)", count, first.Metadata.Version, second.Metadata.Version)
	}
}

// runKillHelper is the process that dies: it stores the trace and is
// killed before it acknowledges it.
func runKillHelper(t *testing.T) {
	nc := natstest.Connect(t)
	st, err := postgres.Open(context.Background(), os.Getenv("H4R_KILL_DSN"), postgres.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	svc := trace.NewService(st, trace.WithLogger(quiet))
	cfg := trace.ConsumerConfig{Stream: os.Getenv("H4R_KILL_STREAM"), Subject: os.Getenv("H4R_KILL_SUBJECT"), Durable: "h4r-traces", AckWait: 10 * time.Second}
	c, err := trace.NewConsumer(nc, svc, cfg, trace.WithConsumerLogger(quiet), trace.WithAfterStore(func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute) // killed long before
	t.Fatal("the helper was not killed")
}
