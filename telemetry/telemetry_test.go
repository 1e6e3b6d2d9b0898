package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/h4r/h4r/telemetry"
)

// TestTracingExportsOverOTLP: with an endpoint, spans reach it as
// OTLP/HTTP protobuf posts to /v1/traces; without one, nothing is sent.
func TestTracingExportsOverOTLP(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" && len(body) > 0 {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	ctx := context.Background()
	tp, shutdown, err := telemetry.Tracing(ctx, collector.URL, "h4r-test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(ctx, "one")
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if posts.Load() == 0 {
		t.Fatal("no span reached the collector")
	}

	off, shutdownOff, err := telemetry.Tracing(ctx, "", "h4r-test")
	if err != nil {
		t.Fatal(err)
	}
	_, span = off.Tracer("test").Start(ctx, "two")
	if span.SpanContext().IsValid() {
		t.Fatal("without an endpoint spans are recorded")
	}
	span.End()
	_ = shutdownOff(ctx)
}
