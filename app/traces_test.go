package app_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/internal/natstest"
)

// TestTracesFromNATSReachAmbientSubscribers: a trace that arrives over the
// JetStream consumer is told to the ambient hubs (through the fan-out
// OpenTraces wires), as one POSTed to /v1/traces is, so that a subscribed
// session gets it as a precedent. Before, only the HTTP ingest told the
// hub, and sessions never heard of traces published to NATS.
func TestTracesFromNATSReachAmbientSubscribers(t *testing.T) {
	nc := natstest.Connect(t)
	stream, prefix := natstest.Names(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.WriteTimeout = 2 * time.Minute
	cfg.NATSURL, cfg.TraceStream, cfg.TraceSubject = natstest.URL(t), stream, prefix+".trace.commit"
	a, err := app.Open(ctx, cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	tr, err := app.OpenTraces(ctx, a, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	if tr.Fanout == nil {
		t.Fatal("no fan-out with NATS_URL set")
	}
	// The hub as h4r serve builds it, over the traces' fan-out. Any
	// relevance pushes: what is tested is that the hub hears of the trace.
	hub, err := decision.NewHub(a.Decisions, tr.Fanout, decision.WithPushThreshold(0), decision.WithPushDebounce(0), decision.WithHubLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Close() })
	sub, err := hub.Join("session-1", h4r.Specialist{Type: "agent", ID: "reader", SecurityLevel: h4r.Public})
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Update(ctx, sub, decision.ContextUpdate{Type: "context_update", Repo: "acme/gateway", Areas: []string{"pkg/auth"}, CurrentTask: "rate limiting in the auth middleware"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("../trace/testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, cfg.TraceSubject, body); err != nil {
		t.Fatal(err)
	}
	// The push names the trace by its UUID, as search and GET /v1/trace do.
	const wantSHA = "9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d"
	select {
	case p := <-sub.Out:
		if id, _ := p.Trace["id"].(string); p.Trace["sha"] != wantSHA || len(id) != 36 || strings.Contains(id, "@") {
			t.Errorf("pushed %v (sha %v), want the UUID of the trace of %s", p.Trace["id"], p.Trace["sha"], wantSHA)
		}
	case <-time.After(2 * time.Minute): // a loaded machine; the push comes as soon as the trace is stored
		t.Fatal("the trace consumed from NATS never reached the ambient subscriber")
	}
}
