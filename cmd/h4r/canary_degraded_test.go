package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/app"
	"github.com/h4r/h4r/engine"
	"github.com/h4r/h4r/scs"
)

// The late and loading answers: a pack whose stages do not return by the
// request deadline comes back as an empty degraded pack naming the index
// being loaded, or, for a caller that prefers one (Prefer: busy=503, and
// every A2A task), as an unavailable error. These answers are built apart
// from the stages that found the candidates, so the harness checks that
// none of what those stages saw rides out in them.
//
// The harness's servers stall a request's policy stage when it carries
// stallHeader: the request then has a deadline of stallDeadline, and the
// stage returns stallPast after it, past the engine's grace, while the
// engine names an index as loading.
const (
	stallHeader   = "X-Cnry-Stall"
	stallDeadline = 300 * time.Millisecond
	stallPast     = 600 * time.Millisecond
)

type stallKey struct{}

// stallSlicer is the engine's policy slicer, stalled for the requests
// stallRequests marks. inner is set once app.Open has built it, before the
// server takes a request.
type stallSlicer struct {
	inner   atomic.Pointer[scs.Slicer]
	stalled atomic.Int64 // stages stalled now: the engine reports an index loading meanwhile
	// planted, when set, is named as loading too: the self-test's leak.
	planted atomic.Pointer[string]
}

func (s *stallSlicer) Slice(ctx context.Context, spec h4r.Specialist, items []*h4r.Item, limits scs.Limits) scs.Outcome {
	if ctx.Value(stallKey{}) != nil {
		s.stalled.Add(1)
		defer s.stalled.Add(-1)
		<-ctx.Done()
		time.Sleep(stallPast)
	}
	return s.inner.Load().Slice(ctx, spec, items, limits)
}

func (s *stallSlicer) Permitted(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []bool {
	return s.inner.Load().Permitted(ctx, spec, items)
}

func (s *stallSlicer) Clear(ctx context.Context, spec h4r.Specialist, items []*h4r.Item) []scs.Cleared {
	return s.inner.Load().Clear(ctx, spec, items)
}

// loading is the engine's WithLoading: the vector index, while a stage is
// stalled.
func (s *stallSlicer) loading() []string {
	if s.stalled.Load() == 0 {
		return nil
	}
	if p := s.planted.Load(); p != nil {
		return []string{"vector index", *p}
	}
	return []string{"vector index"}
}

// appOption is what the server's app.Open is given.
func (s *stallSlicer) appOption() app.Option {
	return app.WithEngineOptions(engine.WithSlicer(s), engine.WithLoading(s.loading))
}

// stallRequests gives a request carrying stallHeader the short deadline
// and the mark the stallSlicer stalls on.
func stallRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(stallHeader) != "" {
			ctx, cancel := context.WithTimeout(context.WithValue(r.Context(), stallKey{}, true), stallDeadline)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// probeDegraded asks for packs the server answers late, while an index is
// loading: the context-pack route (the empty degraded pack, and the 503
// for a caller that prefers it), the A2A envelope and POST /query, and
// A2A message/send (an unavailable error). Every answer is scanned, and
// each must be in the degraded state, or the probe proved nothing: a late
// pack is empty and counts nothing, and an error names no candidate.
func probeDegraded(p *probe) {
	stall := []string{stallHeader, "late"}
	for _, q := range p.h.queries {
		req := `{"query": {"type": "hybrid", "text": "` + q + `"}, "limit": 50, "explain": "all"}`
		p.latePack("POST /v1/context-pack", p.http("POST", "/v1/context-pack", req, stall...), false)
		busy := call(p.srv.base, p.k, "POST", "/v1/context-pack", req, append(stall, "Prefer", "busy=503")...)
		p.scan("POST /v1/context-pack (Prefer: busy=503)", busy.asBytes())
		p.latePack("POST /v1/context-pack (Prefer: busy=503)", busy, true)
		p.latePack("POST /v1/a2a", p.http("POST", "/v1/a2a", `{"meta": {"id": "cnry-m", "type": "ContextRequest"}, "payload": `+req+`}`, stall...), false)
		p.http("POST", "/query", `{"session_id": "cnry-probe", "agent_id": "probe", "query": "`+q+`", "k": 50}`, stall...)
		r := p.http("POST", "/v1/a2a/rpc", a2aSend("message/send", q), stall...)
		if r.status == http.StatusOK && !strings.Contains(string(r.body), "loading its in-memory vector index") {
			p.h.t.Errorf("control: a stalled A2A message/send by %s did not answer that the vector index was loading: %.400s", p.k.name, r.body)
		}
	}
}

// latePack checks that a stalled pack route answered in the degraded
// state: 503 naming the loading index when the caller prefers an error,
// else an empty degraded pack that counts no candidate. An unauthorised
// caller's refusal is its answer as any other route's.
func (p *probe) latePack(where string, r httpResult, wants503 bool) {
	t := p.h.t
	if r.status == http.StatusUnauthorized || r.status == http.StatusForbidden {
		return
	}
	if wants503 {
		if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "vector index") {
			t.Errorf("control: %s by %s, stalled, answered %d, want 503 naming the loading vector index: %.400s", where, p.k.name, r.status, r.body)
		}
		return
	}
	var out struct {
		Payload *h4r.Pack `json:"payload"`
		h4r.Pack
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil {
		t.Errorf("control: %s by %s, stalled, answered %d: %.400s", where, p.k.name, r.status, r.body)
		return
	}
	pk := &out.Pack
	if out.Payload != nil {
		pk = out.Payload
	}
	sl := pk.Explainability.Slicing
	switch {
	case pk.Status != h4r.StatusDegraded || !strings.Contains(strings.Join(pk.Explainability.Warnings, " "), "loading its in-memory vector index"):
		t.Errorf("control: %s by %s, stalled, is %q with warnings %q, want degraded saying the vector index was loading", where, p.k.name, pk.Status, pk.Explainability.Warnings)
	case len(pk.Results) != 0 || pk.TotalCount != 0 || len(pk.Explainability.Items) != 0 ||
		sl.TotalCandidates+sl.TotalKept+sl.TotalRedacted+sl.TotalDroppedBudget+sl.TotalDroppedPolicy+sl.TotalDroppedScore != 0:
		p.h.det.record(finding{surface: p.surface, key: p.k.name + "@" + p.replica, where: where, c: canary{kind: "late-pack", class: "count"},
			snippet: "a late pack that holds or counts candidates: " + string(r.body)})
	}
}

// TestCanaryDegradedDetectsALeak is the degraded probes' own control: with
// a restricted item's text named among the indexes being loaded, as an
// engine that told what it was loading would, the detector reports it in
// the late pack, the 503 and the A2A error, for every key that may ask;
// and a late pack holding or counting candidates is reported.
func TestCanaryDegradedDetectsALeak(t *testing.T) {
	vars := canaryVars(t, t.TempDir(), "")
	h := &harness{t: t, det: newDetector(), vars: vars}
	srv := startCanaryServer(t, vars, nil)
	h.replicas = []*canaryServer{srv}
	h.writer = srv
	h.seed()
	h.queries = []string{topic}
	h.deleteCanaries()
	var restricted canary
	for _, c := range h.det.canaries {
		if c.kind == "item" && c.class == classRestricted {
			restricted = c
		}
	}
	srv.stall.planted.Store(&restricted.marker)
	h.probeAll([]surface{{"degraded", nil, probeDegraded}})
	got := map[string]bool{}
	for _, f := range h.det.all() {
		if f.c.marker == restricted.marker {
			got[strings.TrimSuffix(f.key, "@A")+" "+f.where] = true
		}
	}
	for _, k := range probeKeys[1:] {
		for _, where := range []string{"POST /v1/context-pack", "POST /v1/context-pack (Prefer: busy=503)", "POST /v1/a2a", "POST /v1/a2a/rpc"} {
			if !got[k.name+" "+where] {
				t.Errorf("the restricted item's text named as loading was not reported at %s for key %s (reported: %v)", where, k.name, got)
			}
		}
	}

	before := len(h.det.all())
	p := &probe{h: h, srv: srv, replica: "A", k: keyPublic, surface: "degraded"}
	p.latePack("a planted late pack", httpResult{status: http.StatusOK, body: []byte(`{"status": "degraded", "results": [],
	 "explainability": {"warnings": ["the server was still loading its in-memory vector index"], "slicing": {"totalCandidates": 3, "totalDroppedPolicy": 3}}}`)}, false)
	if len(h.det.all()) != before+1 {
		t.Errorf("a late pack counting 3 candidates was not reported")
	}
}
