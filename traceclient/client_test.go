package traceclient_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/decision"
	"github.com/h4r/h4r/internal/natstest"
	"github.com/h4r/h4r/server"
	"github.com/h4r/h4r/trace"
	"github.com/h4r/h4r/traceclient"
)

var quiet = slog.New(slog.DiscardHandler)

func fixture(t *testing.T) *trace.CommitTrace {
	t.Helper()
	b, err := os.ReadFile("../trace/testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// h4rServer is the real service (app.Open, SQLite) with the trace routes,
// without keys, on loopback.
func h4rServer(t *testing.T) string {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(context.Background(), cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	svc := trace.NewService(a.Store, trace.WithLogger(quiet), trace.WithSearch(a.Engine, a.Slicer))
	srv := server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout), server.WithTraces(svc, server.TraceOptions{}))
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// closedPort is an address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestClientDisabledOrUnreachableIsEmpty(t *testing.T) {
	cases := []struct {
		name string
		cfg  traceclient.Config
	}{
		{"disabled", traceclient.DefaultConfig()},
		{"unreachable", traceclient.Config{Enabled: true, ServiceEndpoint: closedPort(t), Timeout: 2 * time.Second, Logger: quiet}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := traceclient.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			res, err := c.Search(ctx, "rate limiting", traceclient.SearchOptions{Status: "landed"})
			if err != nil || res == nil || len(res.Results) != 0 {
				t.Errorf("Search = %+v, %v; want empty, nil", res, err)
			}
			pre, err := c.Prefetch(ctx, traceclient.PrefetchRequest{Repo: "acme/gateway"})
			if err != nil || pre == nil || len(pre.Precedents) != 0 {
				t.Errorf("Prefetch = %+v, %v; want empty, nil", pre, err)
			}
			if hint, err := c.EscalationHint(ctx, traceclient.EscalationRequest{Repo: "acme/gateway"}); hint != nil || err != nil {
				t.Errorf("EscalationHint = %+v, %v; want nil, nil", hint, err)
			}
			sub, err := c.Subscribe(ctx, "s1", traceclient.ContextUpdate{Repo: "acme/gateway"})
			if err != nil {
				t.Fatal(err)
			}
			if _, open := <-sub.Precedents; open {
				t.Error("Subscribe's channel is open")
			}
		})
	}
}

// TestClientAgainstH4R: without NATS, PublishTrace posts to the real
// server's /v1/traces; Search finds it; a request H4R refuses is an error;
// routes this server lacks (prefetch) are empty, not errors.
func TestClientAgainstH4R(t *testing.T) {
	base := h4rServer(t)
	c, err := traceclient.New(traceclient.Config{Enabled: true, ServiceEndpoint: base, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.PublishTrace(ctx, fixture(t)); err != nil {
		t.Fatal(err)
	}
	res, err := c.Search(ctx, "rate limiting in the auth middleware", traceclient.SearchOptions{Repo: "acme/gateway", IncludeDecisions: true})
	if err != nil || len(res.Results) != 1 || res.Results[0].Trace["sha"] != fixture(t).SHA {
		t.Fatalf("Search = %+v, %v", res, err)
	}
	_, err = c.Search(ctx, "x", traceclient.SearchOptions{Limit: 500})
	var refused *traceclient.RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Message, "limit") {
		t.Fatalf("an invalid search: %v, want a refusal naming limit", err)
	}
	bad := fixture(t)
	bad.SHA = "not-a-sha"
	if err := c.PublishTrace(ctx, bad); err == nil || !strings.Contains(err.Error(), "sha") {
		t.Fatalf("an invalid trace: %v", err)
	}
	if pre, err := c.Prefetch(ctx, traceclient.PrefetchRequest{Repo: "acme/gateway"}); err != nil || len(pre.Precedents) != 0 {
		t.Fatalf("Prefetch on a server without it: %+v, %v", pre, err)
	}
}

// TestClientPublishesOverNATS: the trace arrives on the subject with the
// caller's trace context in its headers.
func TestClientPublishesOverNATS(t *testing.T) {
	nc := natstest.Connect(t)
	_, prefix := natstest.Names(t)
	subject := prefix + ".trace.commit"
	js, _ := nc.JetStream()
	stream := strings.ToUpper(strings.ReplaceAll(prefix, ".", "_"))
	if _, err := js.AddStream(&nats.StreamConfig{Name: stream, Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(stream) })
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	// The client publishes on a connection of its own: without a round
	// trip here the server may see that publish before this subscription.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c, err := traceclient.New(traceclient.Config{Enabled: true, ServiceEndpoint: closedPort(t), NatsURL: natstest.URL(t), Subject: subject, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "commit")
	defer span.End()
	if err := c.PublishTrace(ctx, fixture(t)); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := trace.Decode(msg.Data)
	if err != nil || got.SHA != fixture(t).SHA {
		t.Fatalf("published %v, %v", got, err)
	}
	if tp := msg.Header.Get("traceparent"); !strings.Contains(tp, span.SpanContext().TraceID().String()) {
		t.Fatalf("traceparent %q lacks the caller's trace %s", tp, span.SpanContext().TraceID())
	}
}

// TestClientSubscribe reads pushes from a WebSocket endpoint speaking the
// document's protocol (the ambient endpoint is another branch's).
// TestClientSubscribe: against the real server's routes (ambient hub
// over the decision service), a subscription's first context_update gets
// the stored trace it matches pushed, by its UUID.
func TestClientSubscribe(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.GeneratorTimeout, cfg.RequestTimeout = 30*time.Second, 30*time.Second
	a, err := app.Open(context.Background(), cfg, app.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	hub, err := decision.NewHub(a.Decisions, nil, decision.WithPushDebounce(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hub.Close() })
	svc := trace.NewService(a.Store, trace.WithLogger(quiet), trace.WithSearch(a.Engine, a.Slicer))
	srv := server.New(a.Engine, a.Store, server.WithLogger(quiet), server.WithRequestTimeout(cfg.RequestTimeout),
		server.WithTraces(svc, server.TraceOptions{}), server.WithDecisions(a.Decisions), server.WithAmbient(hub, 0))
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	c, err := traceclient.New(traceclient.Config{Enabled: true, ServiceEndpoint: ts.URL, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.PublishTrace(ctx, fixture(t)); err != nil {
		t.Fatal(err)
	}
	sub, err := c.Subscribe(ctx, "s1", traceclient.ContextUpdate{Repo: "acme/gateway", Areas: []string{"pkg/auth", "pkg/ratelimit"}, CurrentTask: "rate limiting the auth middleware"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case p, ok := <-sub.Precedents:
		if !ok {
			t.Fatal("the subscription closed without a push")
		}
		if p.SHA() != fixture(t).SHA || p.Relevance <= 0.75 {
			t.Fatalf("precedent %+v", p)
		}
		if id, _ := p.Trace["id"].(string); strings.Contains(id, "@") || id == "" {
			t.Errorf("pushed trace id %q, want its UUID", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no push")
	}
	if err := sub.Update(ctx, traceclient.ContextUpdate{Repo: "acme/gateway", Areas: []string{"pkg/store"}}); err != nil {
		t.Fatal(err)
	}
	cancel()
	for range sub.Precedents { // closes once ctx ends
	}
}
