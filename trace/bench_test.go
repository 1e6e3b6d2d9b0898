package trace_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/cputime"
	"github.com/h4r/h4r/trace"
)

// benchAreas and benchTopics make 10k distinct traces with realistic
// overlap: searches match hundreds of them.
var (
	benchAreas  = []string{"pkg/auth", "pkg/ratelimit", "cmd/server", "pkg/store", "pkg/api", "internal/cache", "pkg/billing", "pkg/search"}
	benchTopics = []string{"rate limiting", "token refresh", "cache invalidation", "retry with backoff", "schema migration", "connection pooling", "request validation", "pagination"}
)

// seedTraces stores n traces (one decision each) through Items, as Ingest
// would, in batches.
func seedTraces(b testing.TB, h *harness, n int) {
	b.Helper()
	ctx := context.Background()
	var batch []h4r.Item
	for i := range n {
		topic, area := benchTopics[i%len(benchTopics)], benchAreas[(i/3)%len(benchAreas)]
		tr := &trace.CommitTrace{
			SHA: fmt.Sprintf("%040x", i+1), Repo: fmt.Sprintf("acme/repo%d", i%12), Branch: "feature/x", Author: fmt.Sprintf("dev%d@acme.example", i%40),
			Timestamp: now.Add(-time.Duration(i) * time.Hour), Areas: []string{area},
			Summary: fmt.Sprintf("%s in %s, change %d: %s for %s", topic, area, i, benchTopics[(i+3)%len(benchTopics)], area),
			Decisions: []trace.Decision{{Context: "How to do " + topic + " in " + area, Options: []trace.Option{{Description: "middleware"}, {Description: "handler"}},
				Reasoning: "keeps " + area + " simple", Category: trace.CategoryImplementation, Confidence: 0.8}},
			Status: []trace.TraceStatus{trace.StatusPending, trace.StatusLanded, trace.StatusLanded, trace.StatusReverted}[i%4],
		}
		tr.Normalize()
		items, err := trace.Items(tr)
		if err != nil {
			b.Fatal(err)
		}
		batch = append(batch, items...)
		if len(batch) >= 500 || i == n-1 {
			if _, err := h.app.Store.Upsert(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkSearch10k: POST /v1/search's work (engine run with the kind and
// metadata filters, mapping back to traces) at 10k traces, reported with
// its p95, beside the engine's own run of the same plan as the baseline.
func BenchmarkSearch10k(b *testing.B) {
	h := newHarness(b)
	seedTraces(b, h, 10_000)
	ctx := context.Background()
	queries := []trace.SearchRequest{
		{Query: "rate limiting in the auth middleware"},
		{Query: "cache invalidation", Filters: trace.SearchFilters{Status: "landed"}},
		{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: []string{"cmd/server", "pkg/api"}}, IncludeDecisions: true},
		{Query: "schema migration", IncludeDecisions: true, Limit: 50},
	}
	// Wall times on the shared machine count the time other processes
	// held the cores; the process's CPU time per op does not (generators
	// run on their own goroutines, so the thread's would miss them).
	run := func(b *testing.B, search func(q trace.SearchRequest) error) {
		var lat []time.Duration
		i := 0
		cpu := cputime.MeasureProcess(b)
		for b.Loop() {
			start := time.Now()
			if err := search(queries[i%len(queries)]); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
			i++
		}
		cpu()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
	}
	b.Run("engine", func(b *testing.B) {
		run(b, func(q trace.SearchRequest) error {
			req := h4r.ContextRequest{Query: h4r.Query{Type: h4r.QueryHybrid, Text: q.Query, Filters: map[string]any{"kind": []any{"commit_trace"}}}, Limit: 10}
			plan, err := req.Plan("")
			if err != nil {
				return err
			}
			_, err = h.app.Engine.Run(ctx, publicReader, plan)
			return err
		})
	})
	b.Run("search", func(b *testing.B) {
		run(b, func(q trace.SearchRequest) error {
			res, err := h.svc.Search(ctx, publicReader, q)
			if err == nil && len(res.Results) == 0 {
				err = fmt.Errorf("no results for %q", q.Query)
			}
			return err
		})
	})
}
