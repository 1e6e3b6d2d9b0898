package trace_test

import (
	"context"
	"fmt"
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
