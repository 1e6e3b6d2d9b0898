package trace_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/h4r/h4r/trace"
)

// withField adds a top-level field to a trace's JSON, as a newer producer
// does.
func withField(t *testing.T, body []byte, key string, value any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = value
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestConsumerStoresTracesWithFieldsItDoesNotKnow(t *testing.T) {
	n := newNATS(t)
	h := newHarness(t)
	n.start(t, h.svc)
	n.publish(t, withField(t, traceJSON(t, nil), "session_id", "sess-42"), nil)
	n.settled(t)
	tr := fixture(t)
	if _, err := h.app.Store.Get(context.Background(), trace.ItemID(tr.Repo, tr.SHA)); err != nil {
		t.Fatalf("a trace with session_id was not stored: %v", err)
	}
}

func TestConsumerDeadLettersWhatItCannotStore(t *testing.T) {
	n := newNATS(t)
	n.cfg.DeadLetter = n.cfg.Subject + ".dead"
	h := newHarness(t)
	reg := prometheus.NewRegistry()
	m := trace.NewMetrics(reg)
	n.start(t, h.svc, trace.WithConsumerMetrics(m))
	bad := traceJSON(t, func(c *trace.CommitTrace) { c.Decisions[0].Selected = 7 })
	n.publish(t, []byte(`{"sha": "abc`), nil)
	n.publish(t, bad, nil)
	n.settled(t)

	// The dead-letter subject is stored by the stream the consumer made:
	// an operator replays from there.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := n.js.Stream(ctx, n.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{n.cfg.DeadLetter}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []jetstream.Msg
	for msg := range batch.Messages() {
		got = append(got, msg)
	}
	if len(got) != 2 {
		t.Fatalf("%d messages on the dead-letter subject, want 2", len(got))
	}
	if r := got[0].Headers().Get(trace.HeaderDeadReason); r != "invalid_json" {
		t.Errorf("first dead letter's reason %q, want invalid_json", r)
	}
	if r, f := got[1].Headers().Get(trace.HeaderDeadReason), got[1].Headers().Get(trace.HeaderDeadField); r != "invalid_trace" || !strings.Contains(f, "selected") {
		t.Errorf("second dead letter's reason %q field %q, want invalid_trace naming selected", r, f)
	}
	if string(got[1].Data()) != string(bad) {
		t.Error("the dead letter does not carry the message as published")
	}
	if s := got[1].Headers().Get(trace.HeaderDeadSubject); s != n.cfg.Subject {
		t.Errorf("dead letter's subject header %q, want %q", s, n.cfg.Subject)
	}
	if v := testutil.ToFloat64(m.DeadLettered("invalid_trace")); v != 1 {
		t.Errorf("dead-lettered invalid_trace %v, want 1", v)
	}
}

func TestConsumerUsesAnOperatorsStreamOverTheSubject(t *testing.T) {
	n := newNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The operator's stream, under another name, stores every subject of
	// the prefix.
	prefix, _, _ := strings.Cut(n.cfg.Subject, ".trace.commit")
	ops := n.cfg.Stream + "_OPS"
	if _, err := n.js.CreateStream(ctx, jetstream.StreamConfig{Name: ops, Subjects: []string{prefix + ".>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.js.DeleteStream(context.Background(), ops) })
	n.cfg.DeadLetter = prefix + ".trace.dead"
	h := newHarness(t)
	n.start(t, h.svc)
	n.publish(t, traceJSON(t, nil), nil)
	n.cfg.Stream = ops
	n.settled(t)
	tr := fixture(t)
	if _, err := h.app.Store.Get(ctx, trace.ItemID(tr.Repo, tr.SHA)); err != nil {
		t.Fatalf("the trace on the operator's stream was not stored: %v", err)
	}
}
