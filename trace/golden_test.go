package trace_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/h4r/h4r/trace"
)

var update = flag.Bool("update", false, "rewrite the search goldens in testdata/")

// goldenQueries are searches over the benchmark corpus (seedTraces): the
// benchmark's four, and every filter alone and combined, so that the
// generators' filter checks go through all their rounds (a kind most
// items pass, status and areas a quarter, repo and author a twelfth and a
// fortieth, since a cut in time).
func goldenQueries() []struct {
	name string
	req  trace.SearchRequest
} {
	since := now.Add(-2000 * time.Hour)
	return []struct {
		name string
		req  trace.SearchRequest
	}{
		{"plain", trace.SearchRequest{Query: "rate limiting in the auth middleware"}},
		{"status", trace.SearchRequest{Query: "cache invalidation", Filters: trace.SearchFilters{Status: "landed"}}},
		{"two areas with decisions", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: []string{"cmd/server", "pkg/api"}}, IncludeDecisions: true}},
		{"decisions limit 50", trace.SearchRequest{Query: "schema migration", IncludeDecisions: true, Limit: 50}},
		{"one area", trace.SearchRequest{Query: "token refresh", Filters: trace.SearchFilters{Areas: []string{"pkg/billing"}}}},
		{"repo", trace.SearchRequest{Query: "connection pooling", Filters: trace.SearchFilters{Repo: "acme/repo7"}}},
		{"author with decisions", trace.SearchRequest{Query: "request validation", Filters: trace.SearchFilters{Author: "dev13@acme.example"}, IncludeDecisions: true}},
		{"since", trace.SearchRequest{Query: "pagination", Filters: trace.SearchFilters{Since: &since}, Limit: 30}},
		{"reverted in areas", trace.SearchRequest{Query: "retry with backoff for pkg/store", Filters: trace.SearchFilters{Status: "reverted", Areas: []string{"pkg/store", "pkg/search", "nope"}}}},
		{"repo status areas decisions", trace.SearchRequest{Query: "cache invalidation", Filters: trace.SearchFilters{Repo: "acme/repo5", Status: "landed", Areas: []string{"pkg/auth", "internal/cache"}}, IncludeDecisions: true, Limit: 20}},
		{"mode none match", trace.SearchRequest{Query: "rate limiting", Filters: trace.SearchFilters{Mode: "rlm"}}},
		{"min score", trace.SearchRequest{Query: "schema migration in pkg/api", MinScore: 0.3, Limit: 100}},
		{"limit 100 with decisions", trace.SearchRequest{Query: "middleware handler", IncludeDecisions: true, Limit: 100}},
	}
}

// goldenResult is one search's answer in a form a golden file keeps
// small: each result's trace id, score and matched decisions, with a
// digest of the whole result as delivered (trace and decisions, every
// field, redactions included).
type goldenResult struct {
	Name    string        `json:"name"`
	Total   int           `json:"total"`
	Results []goldenTrace `json:"results"`
}

type goldenTrace struct {
	Trace     string           `json:"trace"`
	Score     float64          `json:"score"`
	Decisions []goldenDecision `json:"decisions,omitempty"`
	Digest    string           `json:"digest"`
}

type goldenDecision struct {
	ID        any     `json:"id"`
	Relevance float64 `json:"relevance"`
}

func golden(t *testing.T, name string, res *trace.SearchResponse) goldenResult {
	t.Helper()
	g := goldenResult{Name: name, Total: res.Total, Results: []goldenTrace{}}
	for _, r := range res.Results {
		whole, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(whole)
		gt := goldenTrace{Trace: fmt.Sprintf("%v@%v", r.Trace["repo"], r.Trace["sha"]), Score: r.Score, Digest: hex.EncodeToString(sum[:12])}
		for _, d := range r.MatchedDecisions {
			gt.Decisions = append(gt.Decisions, goldenDecision{ID: d.Decision["id"], Relevance: d.Relevance})
		}
		g.Results = append(g.Results, gt)
	}
	return g
}

// checkGolden compares got with testdata/name (-update writes it).
func checkGolden(t *testing.T, name string, got []goldenResult) {
	t.Helper()
	path := filepath.Join("testdata", name)
	b, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./trace -run %s -update writes it)", err, t.Name())
	}
	var wantResults []goldenResult
	if err := json.Unmarshal(want, &wantResults); err != nil {
		t.Fatal(err)
	}
	if len(wantResults) != len(got) {
		t.Fatalf("%d searches, the golden file has %d", len(got), len(wantResults))
	}
	for i, w := range wantResults {
		g := got[i]
		wb, _ := json.Marshal(w)
		gb, _ := json.Marshal(g)
		if string(wb) != string(gb) {
			t.Errorf("search %q differs from %s:\n got %s\nwant %s", g.Name, path, gb, wb)
		}
	}
}

// TestSearchGoldenBenchCorpus: searches over the benchmark's corpus (10k
// traces and their decisions) answer exactly what the search recorded in
// testdata/search_golden_10k.json answered: the same traces in the same
// order, with the same scores, decisions and delivered content. The file
// was written by the search before the filter checks moved into memory
// (the latency work on search), so it holds the fast path to the slow one's
// answers.
func TestSearchGoldenBenchCorpus(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("seeds 10k traces: not under -short or -race")
	}
	h := newHarness(t)
	seedTraces(t, h, 10_000)
	var got []goldenResult
	// Twice: the second pass runs on whatever the first left in the
	// store's caches.
	for pass := range 2 {
		for _, q := range goldenQueries() {
			res, err := h.svc.Search(context.Background(), publicReader, q.req)
			if err != nil {
				t.Fatalf("%s: %v", q.name, err)
			}
			got = append(got, golden(t, fmt.Sprintf("%s (pass %d)", q.name, pass+1), res))
		}
	}
	checkGolden(t, "search_golden_10k.json", got)
}

// TestSearchGoldenFilterCases: the cases of TestSearchFilters, with their
// whole answers, against testdata/search_golden_filters.json (written as
// TestSearchGoldenBenchCorpus's).
func TestSearchGoldenFilterCases(t *testing.T) {
	h := filterCorpus(t)
	reqs := []struct {
		name string
		req  trace.SearchRequest
	}{
		{"no filter", trace.SearchRequest{Query: "retry with backoff"}},
		{"repo", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Repo: "acme/billing"}}},
		{"one area", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: []string{"pkg/store"}}}},
		{"any of two areas", trace.SearchRequest{Query: "retry with backoff", Filters: trace.SearchFilters{Areas: []string{"pkg/store", "cmd/server"}}}},
		{"repo and two areas with decisions", trace.SearchRequest{Query: "retry with backoff", IncludeDecisions: true, Filters: trace.SearchFilters{Repo: "acme/gateway", Areas: []string{"pkg/auth", "cmd/server"}}}},
		{"limit", trace.SearchRequest{Query: "retry with backoff", Limit: 2}},
		{"decisions", trace.SearchRequest{Query: "rate limiting middleware", IncludeDecisions: true}},
	}
	var got []goldenResult
	for _, q := range reqs {
		res, err := h.svc.Search(context.Background(), publicReader, q.req)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		got = append(got, golden(t, q.name, res))
	}
	checkGolden(t, "search_golden_filters.json", got)
}
