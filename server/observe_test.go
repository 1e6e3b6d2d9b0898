package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/config"
	"github.com/h4r/h4r/server"
)

// logBuffer collects JSON log lines from concurrent handlers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the logged records whose msg is msg.
func (b *logBuffer) records(t testing.TB, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %v: %s", err, sc.Bytes())
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

func jsonLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestAccessLog checks the one structured line per request: the request
// id (the client's, echoed in the header and the envelope's meta), the
// route pattern, the status and the key's id, never the key.
func TestAccessLog(t *testing.T) {
	var logs logBuffer
	base := newAuthStack(t, server.WithLogger(jsonLogger(&logs))).serve(t)
	tests := []struct {
		name   string
		path   string
		body   string
		key    string
		id     string
		route  string
		status float64
	}{
		{"a pack", "/v1/context-pack", healerBody, healerKey, "log-pack-1", "/v1/context-pack", 200},
		{"an envelope", "/v1/a2a", `{"meta": {"id": "msg-log", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`, healerKey, "log-a2a-1", "/v1/a2a", 200},
		{"a refused key", "/v1/context-pack", healerBody, "wrong", "log-401", "/v1/context-pack", 401},
		{"a bad body", "/v1/context-pack", `{"query": {"text": "x", "lang": "en"}}`, healerKey, "log-400", "/v1/context-pack", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, base+tt.path, tt.body, append(bearer(tt.key), "X-Request-Id", tt.id)...)
			if float64(r.status) != tt.status {
				t.Fatalf("status %d, want %v: %s", r.status, tt.status, r.body)
			}
			if got := r.header.Get("X-Request-Id"); got != tt.id {
				t.Errorf("X-Request-Id %q, want %q", got, tt.id)
			}
			if tt.path == "/v1/a2a" {
				if env := decodeEnvelope(t, r); env.Meta.ID != tt.id || env.Meta.ReplyTo != "msg-log" {
					t.Errorf("meta.id %q reply_to %q, want the request id and msg-log", env.Meta.ID, env.Meta.ReplyTo)
				}
			}
			var found map[string]any
			for _, rec := range logs.records(t, "request") {
				if rec["request_id"] == tt.id {
					found = rec
				}
			}
			if found == nil {
				t.Fatalf("no access log line with request_id %q", tt.id)
			}
			if found["route"] != tt.route || found["status"] != tt.status || found["method"] != "POST" {
				t.Errorf("access log %v, want route %s status %v", found, tt.route, tt.status)
			}
			if tt.status == 200 && found["principal"] != "playwright_healer" {
				t.Errorf("access log principal %v, want playwright_healer", found["principal"])
			}
		})
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if bytes.Contains(logs.buf.Bytes(), []byte(healerKey)) {
		t.Error("the logs hold an API key")
	}
}

// TestPanicLogged checks that a recovered panic is logged with the
// request id the client gets in the error message.
func TestPanicLogged(t *testing.T) {
	var logs logBuffer
	s := newStack(t, server.WithLogger(jsonLogger(&logs)))
	s.srv.AddPanicRoute("/test/panic", func() { panic("boom") })
	base := s.serve(t)
	r := do(t, http.MethodGet, base+"/test/panic", nil, "X-Request-Id", "panic-log-1")
	if e := checkErrorShape(t, r); !strings.Contains(e.Message, "panic-log-1") {
		t.Errorf("message %q without the request id", e.Message)
	}
	recs := logs.records(t, "panic in handler")
	if len(recs) != 1 || recs[0]["request_id"] != "panic-log-1" || recs[0]["level"] != "ERROR" {
		t.Fatalf("panic log records %v, want one ERROR with request_id panic-log-1", recs)
	}
	if !strings.Contains(recs[0]["stack"].(string), "server_test") {
		t.Error("the panic log has no stack")
	}
	if acc := logs.records(t, "request"); len(acc) != 1 || acc[0]["status"] != float64(500) {
		t.Errorf("access log %v, want one line with status 500", acc)
	}
}

// TestLogHandler checks that a logger built on server.LogHandler adds the
// request id of the context, as the engine's logs get it.
func TestLogHandler(t *testing.T) {
	var logs logBuffer
	l := slog.New(server.LogHandler(slog.NewJSONHandler(&logs, nil)))
	l.InfoContext(context.Background(), "outside")
	if recs := logs.records(t, "outside"); len(recs) != 1 || recs[0]["request_id"] != nil {
		t.Errorf("a record without a request has request_id: %v", recs)
	}
	if server.LogHandler(l.Handler()) != l.Handler() {
		t.Error("LogHandler wraps twice")
	}
}

// TestReady checks that /health/ready reports each backend, fails when one
// fails, and keeps the failure's text (which may name hosts) out of the
// unauthenticated answer.
func TestReady(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		status int
		check  string
	}{
		{"every backend answers", nil, http.StatusOK, "ok"},
		{"the vector index is down", errors.New("dial tcp 10.0.0.7:6334: connection refused"), http.StatusServiceUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStack(t, server.WithReadinessCheck("vectors", func(ctx context.Context) error {
				if _, ok := ctx.Deadline(); !ok {
					return errors.New("a check without a deadline")
				}
				return tt.err
			}))
			r := do(t, http.MethodGet, s.serve(t)+"/health/ready", nil)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.status, tt.status, r.body)
			}
			var ready struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			if err := json.Unmarshal(r.body, &ready); err != nil {
				t.Fatal(err)
			}
			if ready.Checks["vectors"] != tt.check || ready.Checks["store"] != "ok" {
				t.Errorf("checks %v, want vectors %s and store ok", ready.Checks, tt.check)
			}
			if bytes.Contains(r.body, []byte("10.0.0.7")) {
				t.Errorf("the probe leaks the error: %s", r.body)
			}
		})
	}
}

// TestMetrics checks /metrics after real traffic: the item contract's names are
// all there, with values that the traffic must have moved.
func TestMetrics(t *testing.T) {
	base := newAuthStack(t).serve(t)
	if r := post(t, base+"/v1/context-pack", healerBody, bearer(healerKey)...); r.status != http.StatusOK {
		t.Fatalf("pack: %d %s", r.status, r.body)
	}
	if r := post(t, base+"/v1/context-pack", healerBody, bearer("wrong")...); r.status != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", r.status)
	}
	if r := post(t, base+"/v1/context-pack", `{"query": {"text": ""}}`, bearer(healerKey)...); r.status != http.StatusBadRequest {
		t.Fatalf("bad body: %d", r.status)
	}
	r := do(t, http.MethodGet, base+"/metrics", nil, bearer(adminKey)...)
	if r.status != http.StatusOK {
		t.Fatalf("metrics: %d %s", r.status, r.body)
	}
	values := parseMetrics(t, r.body)
	tests := []struct {
		series string
		check  func(float64) bool
		want   string
	}{
		{`h4r_retrieval_duration_seconds_count`, eq(1), "1 pack"},
		{`scs_slicing_duration_seconds_count`, eq(1), "1 pack"},
		{`context_pack_assembly_duration_seconds_count`, eq(1), "1 pack"},
		{`h4r_candidates_total{source="fulltext"}`, gt(0), "> 0"},
		{`h4r_generator_duration_seconds_count{source="fulltext"}`, eq(1), "1"},
		{`scs_budget_utilization_ratio_count{kind="tokens"}`, eq(1), "1"},
		{`scs_budget_utilization_ratio_count{kind="bytes"}`, eq(1), "1"},
		{`scs_budget_utilization_ratio_count{kind="items"}`, eq(1), "1"},
		{`scs_opa_cache_hits_total`, eq(0), "0 (no decision cache wired)"},
		{`scs_opa_cache_misses_total`, eq(0), "0 (no decision cache wired)"},
		{`context_packs_total{status="ok"}`, eq(1), "1"},
		{`h4r_requests_rejected_total{reason="unauthenticated"}`, eq(1), "1"},
		{`h4r_requests_rejected_total{reason="invalid_argument"}`, eq(1), "1"},
		{`h4r_http_requests_total{code="200",route="/v1/context-pack"}`, eq(1), "1"},
		{`process_resident_memory_bytes`, gt(0), "> 0"},
		{`h4r_packs_in_flight`, eq(0), "0 once every pack is answered"},
	}
	for _, tt := range tests {
		v, ok := values[tt.series]
		if !ok || !tt.check(v) {
			t.Errorf("%s = %v (present %v), want %s", tt.series, v, ok, tt.want)
		}
	}
	// Affordances: the healer's login failures suggest at least one.
	var affordances float64
	for k, v := range values {
		if strings.HasPrefix(k, "context_pack_affordances_generated_total{") {
			affordances += v
		}
	}
	if affordances == 0 {
		t.Error("no context_pack_affordances_generated_total series counted the pack's affordances")
	}
}

func eq(want float64) func(float64) bool { return func(v float64) bool { return v == want } }
func gt(min float64) func(float64) bool  { return func(v float64) bool { return v > min } }

// parseMetrics reads the Prometheus text format into series → value.
func parseMetrics(t testing.TB, body []byte) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestDeadlineEnvelope checks that an expired deadline gives an A2A caller
// a ContextResult with a degraded pack, never a ContextError.
func TestDeadlineEnvelope(t *testing.T) {
	base := newStack(t, server.WithRequestTimeout(1)).serve(t)
	r := post(t, base+"/v1/a2a", `{"meta": {"id": "msg-dl", "type": "ContextRequest"}, "payload": {"query": {"text": "login test failures"}}}`)
	env := decodeEnvelope(t, r)
	if r.status != http.StatusOK || env.Meta.Type != h4r.TypeContextResult {
		t.Fatalf("status %d type %s, want 200 ContextResult: %s", r.status, env.Meta.Type, r.body)
	}
	p := decodePack(t, response{status: http.StatusOK, body: env.Payload})
	if p.Status != h4r.StatusDegraded {
		t.Errorf("status %q, want degraded", p.Status)
	}
	joined := strings.Join(p.Explainability.Warnings, "\n")
	if !strings.Contains(joined, "deadline") {
		t.Errorf("warnings do not say the deadline expired: %q", joined)
	}
}

// TestGeneratorFailureDegrades checks, over HTTP, that generators that
// fail (here: each misses its own deadline) give a 200 pack with status
// degraded whose sources and warnings name them, never an error page.
func TestGeneratorFailureDegrades(t *testing.T) {
	base := newStackWith(t, func(c *config.Config) { c.GeneratorTimeout = time.Nanosecond }).serve(t)
	for _, route := range []string{"/v1/context-pack", "/v1/a2a"} {
		t.Run(route, func(t *testing.T) {
			var p *h4r.Pack
			if route == "/v1/a2a" {
				r := post(t, base+route, `{"meta": {"id": "msg-gf", "type": "ContextRequest"}, "payload": {"query": {"type": "keyword", "text": "login test failures"}}}`)
				env := decodeEnvelope(t, r)
				if r.status != http.StatusOK || env.Meta.Type != h4r.TypeContextResult {
					t.Fatalf("status %d type %s: %s", r.status, env.Meta.Type, r.body)
				}
				p = decodePack(t, response{status: http.StatusOK, body: env.Payload})
			} else {
				p = decodePack(t, post(t, base+route, `{"query": {"type": "keyword", "text": "login test failures"}}`))
			}
			if p.Status != h4r.StatusDegraded {
				t.Errorf("status %q, want degraded", p.Status)
			}
			if p.Sources["fulltext"].Error == "" {
				t.Errorf("sources.fulltext %+v does not say it failed", p.Sources["fulltext"])
			}
			if !slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "fulltext") && strings.Contains(w, "timed out") }) {
				t.Errorf("warnings %q do not name the failed generator", p.Explainability.Warnings)
			}
		})
	}
}

// TestBusyServerAnswersDegraded holds every pack slot and checks that a
// context request then gets, after half its deadline, an empty degraded
// pack that says the server was busy — while a bad request still gets its
// error — and that a freed slot serves packs again.
func TestBusyServerAnswersDegraded(t *testing.T) {
	s := newStack(t, server.WithRequestTimeout(400*time.Millisecond))
	base := s.serve(t)
	busy := func(p *h4r.Pack) bool {
		return slices.ContainsFunc(p.Explainability.Warnings, func(w string) bool { return strings.Contains(w, "server was busy") })
	}
	release := s.srv.HoldSlots()
	p := decodePack(t, post(t, base+"/v1/context-pack", healerBody, "X-Request-Id", "busy-1"))
	if p.Status != h4r.StatusDegraded || !busy(p) || len(p.Results) != 0 || p.RequestID != "busy-1" {
		t.Errorf("while busy: status %q, %d results, request_id %q, warnings %q; want an empty degraded pack saying busy", p.Status, len(p.Results), p.RequestID, p.Explainability.Warnings)
	}
	env := decodeEnvelope(t, post(t, base+"/v1/a2a", `{"meta": {"id": "msg-busy", "type": "ContextRequest"}, "payload": {"query": {"text": "login"}}}`))
	if env.Meta.Type != h4r.TypeContextResult {
		t.Errorf("A2A while busy: %s, want a ContextResult", env.Meta.Type)
	}
	if e := checkErrorShape(t, post(t, base+"/v1/context-pack", `{"query": {"text": "x", "type": "fuzzy"}}`)); e.Field != "query.type" {
		t.Errorf("a bad request while busy: %+v, want its own error on query.type", e)
	}
	release()
	if p := decodePack(t, post(t, base+"/v1/context-pack", healerBody)); busy(p) {
		t.Errorf("after the slots are free the pack still says busy: %q", p.Explainability.Warnings)
	}
}
