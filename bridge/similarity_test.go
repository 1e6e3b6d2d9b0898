package bridge_test

import (
	"testing"

	"github.com/h4r/h4r/bridge"
)

// TestSimilarityRanges: the contract's table of expected similarity
// ranges, concept-only, for two calls of one tool without a domain, and
// its two scenarios with domains.
func TestSimilarityRanges(t *testing.T) {
	cases := []struct {
		name             string
		a, b             string
		domainA, domainB string
		lo, hi           float64
	}{
		{"identical", "optimize database queries", "optimize database queries", "", "", 0.95, 1},
		{"same domain and intent", "optimize database queries", "speed up SQL execution", "", "", 0.7, 0.9},
		{"related concepts", "Go error handling patterns", "Golang panic recovery", "", "", 0.5, 0.7},
		{"different domains", "database optimization", "frontend component design", "", "", 0, 0.2},
		{"semantic similarity", "API rate limiting", "throttling HTTP requests", "", "", 0.6, 0.8},
		{"scenario: similar domain", "Best practices database optimization", "SQL query performance tuning", "engineering", "engineering", 0.6, 0.8},
		{"scenario: unrelated topics", "Database query optimization", "Frontend component design", "backend", "frontend", 0, 0.3 - 1e-9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := bridge.ExtractSignature("think", map[string]any{"content": tc.a, "domain": tc.domainA}, bridge.TechExtractor{})
			b := bridge.ExtractSignature("think", map[string]any{"content": tc.b, "domain": tc.domainB}, bridge.TechExtractor{})
			for _, sim := range []float64{bridge.ConceptSimilarity(a, b), bridge.ConceptSimilarity(b, a)} {
				if sim < tc.lo || sim > tc.hi {
					t.Errorf("similarity of %q (%v) and %q (%v) = %.3f, want %.2f-%.2f", tc.a, a.KeyConcepts, tc.b, b.KeyConcepts, sim, tc.lo, tc.hi)
				}
			}
		})
	}
}

func TestPhrases(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"API rate limiting", []string{"api", "ratelimit"}},
		{"rate-limit the API", []string{"ratelimit", "api"}},
		{"throttling and rate limits", []string{"ratelimit"}},
		{"the rate of a limit", []string{"rate", "limit"}},
	}
	for _, tc := range cases {
		t.Run(tc.text, func(t *testing.T) {
			got := bridge.TechExtractor{}.Extract(tc.text)
			if len(got) != len(tc.want) {
				t.Fatalf("Extract(%q) = %v, want %v", tc.text, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("Extract(%q) = %v, want %v", tc.text, got, tc.want)
				}
			}
		})
	}
}
