package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r/internal/syncbuf"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/h4r/h4r/internal/natstest"
)

// startServe runs the real serve command and returns its base URL and
// its log; the server stops when t ends.
func startServe(t *testing.T, vars map[string]string) (string, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	logs := &syncbuf.Buffer{}
	go func() { done <- cmdServe(ctx, []string{"--demo", "--addr", "127.0.0.1:0"}, logs, env(vars), ready) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
		return "http://" + addr, logs
	case err := <-done:
		cancel()
		t.Fatalf("serve exited: %v\n%s", err, logs.String())
	case <-time.After(patience):
		cancel()
		t.Fatal("serve did not listen")
	}
	return "", nil
}

func httpDo(t *testing.T, method, url string, body []byte, header ...string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// TestServeDemoWithoutNATS: h4r serve --demo needs no NATS server. Without
// NATS_URL it skips the consumer with a log line saying so, /health/ready
// has no nats check, and POST /v1/traces still ingests.
func TestServeDemoWithoutNATS(t *testing.T) {
	base, logs := startServe(t, map[string]string{"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "info", "H4R_WRITE_TIMEOUT_MS": "120000"})
	if !strings.Contains(logs.String(), "commit trace consumer skipped: NATS_URL is not set") {
		t.Fatalf("no log line saying the consumer was skipped:\n%s", logs.String())
	}
	status, body := httpDo(t, http.MethodGet, base+"/health/ready", nil)
	if status != http.StatusOK || strings.Contains(string(body), "nats") {
		t.Fatalf("ready: %d %s", status, body)
	}
	trace, err := os.ReadFile("../../trace/testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	if status, body := httpDo(t, http.MethodPost, base+"/v1/traces", trace); status != http.StatusOK {
		t.Fatalf("POST /v1/traces: %d %s", status, body)
	}
	// GET /v1/stats counts the vectors of the store's index: the demo
	// corpus and the trace's items all have one (it said 0 before serve
	// gave the route a counter).
	status, body = httpDo(t, http.MethodGet, base+"/v1/stats", nil)
	var stats struct {
		Traces  struct{ Total int }
		Storage struct {
			Vectors int `json:"qdrant_vectors"`
		}
	}
	if status != http.StatusOK || json.Unmarshal(body, &stats) != nil {
		t.Fatalf("stats: %d %s", status, body)
	}
	if stats.Traces.Total != 1 || stats.Storage.Vectors <= stats.Traces.Total {
		t.Fatalf("stats: %d traces, %d vectors; want 1 trace and a vector for every item (%s)", stats.Traces.Total, stats.Storage.Vectors, body)
	}
}

// TestServeTraceLifecycleOverNATS is a commit trace's life as a new
// user sees it: publish a trace to NATS with a plain client, read it back
// pending, send a signed merged-PR webhook, see it landed, find it by
// status landed.
func TestServeTraceLifecycleOverNATS(t *testing.T) {
	nc := natstest.Connect(t)
	stream, prefix := natstest.Names(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	const secret = "webhook-secret"
	base, _ := startServe(t, map[string]string{
		"H4R_DATA_DIR": t.TempDir(), "H4R_LOG_LEVEL": "warn", "H4R_WRITE_TIMEOUT_MS": "120000",
		"H4R_GENERATOR_TIMEOUT_MS": "60000", "H4R_REQUEST_TIMEOUT_MS": "60000",
		"NATS_URL": natstest.URL(t), "H4R_TRACE_STREAM": stream, "H4R_TRACE_SUBJECT": prefix + ".trace.commit",
		"H4R_LANDED_SUBJECT": prefix + ".event.landed", "H4R_GITHUB_WEBHOOK_SECRET": secret,
	})
	landed, err := nc.SubscribeSync(prefix + ".event.landed")
	if err != nil {
		t.Fatal(err)
	}
	// The server publishes on a connection of its own: the round trip
	// makes sure this subscription is registered before it does.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	trace, err := os.ReadFile("../../trace/testdata/trace.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), prefix+".trace.commit", trace); err != nil {
		t.Fatal(err)
	}
	const path = "/v1/trace/acme/gateway/9f2c4e1a7b3d5f60812c4e6a8b0d2f4a6c8e0b1d"
	var got struct {
		Trace map[string]any `json:"trace"`
	}
	deadline := time.Now().Add(patience)
	for {
		status, body := httpDo(t, http.MethodGet, base+path, nil)
		if status == http.StatusOK {
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the published trace never arrived: %d %s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got.Trace["status"] != "pending" {
		t.Fatalf("status %v, want pending", got.Trace["status"])
	}
	status, body := httpDo(t, http.MethodGet, base+"/health/ready", nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"nats":"ok"`) {
		t.Fatalf("ready: %d %s", status, body)
	}

	pr, err := os.ReadFile("../../trace/testdata/github/pull_request_merged.json")
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(pr)
	status, body = httpDo(t, http.MethodPost, base+"/webhook/github", pr, "X-GitHub-Event", "pull_request",
		"X-GitHub-Delivery", "8e0dece0-cfbd-11e9-8e4c-f48db7a5cca7", "X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	if status != http.StatusOK || !strings.Contains(string(body), `"traces_updated":1`) {
		t.Fatalf("webhook: %d %s", status, body)
	}
	if msg, err := landed.NextMsg(10 * time.Second); err != nil || !strings.Contains(string(msg.Data), `"status":"landed"`) {
		t.Fatalf("no landed event: %v", err)
	}
	status, body = httpDo(t, http.MethodPost, base+"/v1/search", []byte(`{"query": "rate limiting in the auth middleware", "filters": {"status": "landed"}}`))
	if status != http.StatusOK || !strings.Contains(string(body), `"status":"landed"`) || !strings.Contains(string(body), `"total":1`) {
		t.Fatalf("search: %d %.500s", status, body)
	}
}
