package trace_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/h4r/h4r/trace"
)

func TestSearchFilters(t *testing.T) {
	h := newHarness(t)
	areas := []string{"pkg/auth", "pkg/store", "cmd/server"}
	for i := range 6 {
		tr := fixture(t)
		tr.SHA = fmt.Sprintf("%040x", i+1)
		tr.Repo = []string{"acme/gateway", "acme/billing"}[i%2]
		tr.Areas = []string{areas[i%3]}
		tr.Summary = fmt.Sprintf("retry with backoff in %s, change %d", areas[i%3], i)
		h.ingest(t, tr)
	}
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
// none when the top hits were all in other areas (issue 15). Each area
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
