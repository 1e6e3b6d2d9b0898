package trace_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/trace"
)

func TestSearchFilters(t *testing.T) {
	h := filterCorpus(t)
	cases := []struct {
		name string
		req  trace.SearchRequest
		want int
	}{
		{"no filter", trace.SearchRequest{Query: "retry with backoff"}, 6},
		{"repo", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Repo: "acme/billing"}}, 3},
		{"one area", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: []string{"pkg/store"}}}, 2},
		{"any of two areas", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: []string{"pkg/store", "cmd/server"}}}, 4},
		{"repo and two areas with decisions", trace.SearchRequest{Query: "retry with backoff", IncludeDecisions: true, Filters: trace.SearchFilters{Repo: "acme/gateway", Areas: []string{"pkg/auth", "cmd/server"}}}, 2},
		{"limit", trace.SearchRequest{Query: "retry with backoff", Limit: 2}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.svc.Search(context.Background(), publicReader, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != tc.want {
				t.Fatalf("%d results, want %d", len(res.Results), tc.want)
			}
			for _, r := range res.Results {
				if tc.req.Filters.Repo != "" && r.Trace["repo"] != tc.req.Filters.Repo {
					t.Errorf("a result of %v", r.Trace["repo"])
				}
			}
		})
	}
}

// TestSearchAnyAreaPastCandidateWindow: with many traces like the query,
// the engine's candidate generators return a fixed number of hits (not
// the request's limit), so filtering several areas after ranking found
// none when the top hits were all in other areas. Each area
// must reach the generators as a filter.
func TestSearchAnyAreaPastCandidateWindow(t *testing.T) {
	h := newHarness(t)
	seedTraces(t, h, 1200)
	areas := []string{"cmd/server", "pkg/api"}
	for _, decisions := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_decisions=%v", decisions), func(t *testing.T) {
			res, err := h.svc.Search(context.Background(), publicReader, trace.SearchRequest{Query: "retry with backoff", IncludeDecisions: decisions, Filters: trace.SearchFilters{Areas: areas}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != trace.DefaultSearchLimit {
				t.Fatalf("%d results, want %d (hundreds of traces match)", len(res.Results), trace.DefaultSearchLimit)
			}
			for _, r := range res.Results {
				have, _ := r.Trace["areas"].([]any)
				if !slices.ContainsFunc(have, func(a any) bool { s, _ := a.(string); return slices.Contains(areas, s) }) {
					t.Errorf("trace %v has areas %v, none of %v", r.Trace["sha"], have, areas)
				}
			}
		})
	}
}

// countingRunner counts the engine requests a search makes and keeps
// their plans.
type countingRunner struct {
	inner trace.Runner
	mu    sync.Mutex
	plans []*h4r.Plan
}

func (c *countingRunner) Run(ctx context.Context, spec h4r.Specialist, plan *h4r.Plan) (*h4r.Pack, error) {
	c.mu.Lock()
	c.plans = append(c.plans, plan)
	c.mu.Unlock()
	return c.inner.Run(ctx, spec, plan)
}

// TestSearchSeveralAreasIsOneEngineRequest: areas reach the generators as
// one any-of tag filter, so several areas cost one engine run (they once
// cost one run per area, merged with approximate scores).
func TestSearchSeveralAreasIsOneEngineRequest(t *testing.T) {
	h := newHarness(t)
	runner := &countingRunner{inner: h.app.Engine}
	svc := trace.NewService(h.app.Store, trace.WithClock(clock), trace.WithLogger(quiet), trace.WithSearch(runner, h.app.Slicer))
	areas := []string{"pkg/auth", "pkg/store", "cmd/server"}
	for i := range 6 {
		tr := fixture(t)
		tr.SHA = fmt.Sprintf("%040x", i+1)
		tr.Areas = []string{areas[i%3]}
		tr.Summary = fmt.Sprintf("retry with backoff in %s, change %d", areas[i%3], i)
		h.ingest(t, tr)
	}
	for _, tc := range []struct {
		name  string
		areas []string
		want  int
	}{
		{"no area", nil, 6},
		{"one area", []string{"pkg/auth"}, 2},
		{"three areas", []string{"pkg/auth", "pkg/store", "nope"}, 4},
		{"repeated area", []string{"cmd/server", "cmd/server"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runner.mu.Lock()
			runner.plans = nil
			runner.mu.Unlock()
			res, err := svc.Search(context.Background(), publicReader, trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: tc.areas}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Results) != tc.want {
				t.Errorf("%d results, want %d", len(res.Results), tc.want)
			}
			if len(runner.plans) != 1 {
				t.Fatalf("%d engine requests, want 1", len(runner.plans))
			}
			f := runner.plans[0].Filters
			if len(f.Tags) != 0 || !slices.Equal(f.AnyTags, tc.areas) {
				t.Errorf("plan tags %v anyTags %v, want anyTags %v", f.Tags, f.AnyTags, tc.areas)
			}
		})
	}
}

// TestSearchBadAreaNamesTheField: an area the stores' filter refuses is
// named as the request's field, not the engine's anyTags.
func TestSearchBadAreaNamesTheField(t *testing.T) {
	h := newHarness(t)
	_, err := h.svc.Search(context.Background(), publicReader, trace.SearchRequest{Query: "retry", Filters: trace.SearchFilters{Areas: []string{"pkg/auth", "pkg/\x00"}}})
	e, ok := err.(*h4r.Error)
	if !ok || e.Code != h4r.EINVALID || e.Field != "filters.areas[1]" {
		t.Fatalf("error %v, want invalid_argument naming filters.areas[1]", err)
	}
}

// TestSearchTotalCountsEveryMatch: total is every trace the caller may see
// that matches, whatever the limit.
func TestSearchTotalCountsEveryMatch(t *testing.T) {
	h := filterCorpus(t)
	for _, limit := range []int{1, 3, 10} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			res, err := h.svc.Search(context.Background(), publicReader, trace.SearchRequest{Query: "retry with backoff", Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 6 || len(res.Results) != min(limit, 6) {
				t.Errorf("total %d with %d results, want 6 with %d", res.Total, len(res.Results), min(limit, 6))
			}
		})
	}
}
