package demo_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/demo"
	"github.com/h4r/h4r/policy"
	"github.com/h4r/h4r/tokens"
)

// The corpus is dated relative to this day: the README's demo runs on it.
var corpusDay = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

func mustItems(t *testing.T) []h4r.Item {
	t.Helper()
	items, err := demo.Items()
	if err != nil {
		t.Fatalf("Items() error: %v", err)
	}
	return items
}

// deliveredTokens counts an item's tokens as the slicer does: the delivered
// JSON, exactly, with cl100k_base.
func deliveredTokens(t *testing.T, c *tokens.Counter, it h4r.Item) int {
	t.Helper()
	b, err := it.Delivered().Encode()
	if err != nil {
		t.Fatal(err)
	}
	return c.Count(string(b))
}

// resolves reports whether a "$.content.a.b" path names a value in content.
func resolves(content map[string]any, path string) bool {
	rest, ok := strings.CutPrefix(path, "$.content.")
	if !ok {
		return false
	}
	var v any = content
	for _, key := range strings.Split(rest, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[key]; !ok {
			return false
		}
	}
	return true
}

func TestItemsAreValid(t *testing.T) {
	items := mustItems(t)
	if len(items) < 60 {
		t.Errorf("the corpus has %d items, want at least 60", len(items))
	}
	ids := map[string]bool{}
	for i, it := range items {
		if err := it.Validate(""); err != nil {
			t.Errorf("item %d (%s): %v", i, it.ID, err)
		}
		if ids[it.ID] {
			t.Errorf("id %s is used twice", it.ID)
		}
		ids[it.ID] = true
		m := it.Metadata
		if m.AccessCount != 0 || m.Version != 0 || m.ByteSize != 0 || m.Tokens != 0 || !m.UpdatedAt.IsZero() || !m.LastAccessedAt.IsZero() {
			t.Errorf("%s sets store-maintained metadata (accessCount, version, sizes, updatedAt, lastAccessedAt)", it.ID)
		}
		if age := corpusDay.Add(24 * time.Hour).Sub(m.CreatedAt); m.CreatedAt.IsZero() || age < 0 || age > 125*24*time.Hour {
			t.Errorf("%s createdAt %v is not within the ~120 days before %s", it.ID, m.CreatedAt, corpusDay.Format(time.DateOnly))
		}
		if it.Kind == "" || m.Source == "" || m.Importance == nil || m.Trust == nil || m.Sensitivity == nil {
			t.Errorf("%s lacks kind, source, importance, trust or sensitivity: the demo shows every signal", it.ID)
		}
		for _, p := range m.PIIFields {
			if !resolves(it.Content, p) {
				t.Errorf("%s: piiField %s points at nothing in content", it.ID, p)
			}
		}
		if m.ContainsPII != (len(m.PIIFields) > 0) {
			t.Errorf("%s: containsPII is %v but it lists %d piiFields", it.ID, m.ContainsPII, len(m.PIIFields))
		}
	}
	for _, it := range items {
		for _, l := range it.Links {
			if !ids[l.Target] {
				t.Errorf("%s links (%s) to %s, which is not in the corpus", it.ID, l.Type, l.Target)
			}
			if l.Target == it.ID {
				t.Errorf("%s links to itself", it.ID)
			}
		}
	}
}

// Items returns new items on each call: a caller changing them must not
// change the next caller's corpus.
func TestItemsReturnsCopies(t *testing.T) {
	first := mustItems(t)
	first[0].Text = "changed"
	first[0].Content["changed"] = true
	second := mustItems(t)
	if second[0].Text == "changed" || second[0].Content["changed"] == true {
		t.Error("a change to the items of one Items call shows in the next")
	}
}

func TestCorpusHasEveryCategory(t *testing.T) {
	items := mustItems(t)
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	str := func(m map[string]any, key string) string { s, _ := m[key].(string); return s }
	tests := []struct {
		name     string
		min, max int // max 0: no upper bound
		is       func(h4r.Item) bool
	}{
		{"personal data to redact", 2, 0, func(it h4r.Item) bool {
			return it.Metadata.ContainsPII && slices.Contains(it.Metadata.PIIFields, "$.content.personalData")
		}},
		{"exactly one item with credentials", 1, 1, func(it h4r.Item) bool { return it.Metadata.HasCredentials }},
		{"secrets are obviously fake", 1, 1, func(it h4r.Item) bool {
			b, _ := json.Marshal(it.Content)
			return it.Metadata.HasCredentials && strings.Contains(string(b), "ghp_FAKEFAKE")
		}},
		{"sensitivity above 0.7", 2, 0, func(it h4r.Item) bool { return it.Metadata.SensitivityValue() > 0.7 }},
		{"restricted to security", 1, 0, func(it h4r.Item) bool { return slices.Contains(it.Metadata.RestrictedToGroups, "security") }},
		{"restricted to qa", 1, 0, func(it h4r.Item) bool { return slices.Contains(it.Metadata.RestrictedToGroups, "qa") }},
		{"low trust", 1, 0, func(it h4r.Item) bool { return it.Metadata.TrustValue() < 0.3 }},
		{"e2e test failures", 10, 0, func(it h4r.Item) bool {
			x := it.Metadata.Extra
			return it.Kind == "test_failure" && x["status"] == "failed" && x["test_type"] != nil &&
				str(it.Content, "test") != "" && str(it.Content, "selector") != ""
		}},
		{"selector changes", 3, 0, func(it h4r.Item) bool { return it.Kind == "selector_change" && str(it.Content, "selector") != "" }},
		{"flaky tests tagged flaky", 3, 0, func(it h4r.Item) bool {
			return it.Kind == "flaky_test" && slices.Contains(it.Metadata.Tags, "flaky")
		}},
		{"decisions with alternatives", 5, 0, func(it h4r.Item) bool {
			alts, _ := it.Content["alternatives"].([]any)
			return it.Kind == "decision" && len(alts) >= 2
		}},
		{"fixes", 5, 0, func(it h4r.Item) bool { return it.Kind == "fix" }},
		{"commits", 5, 0, func(it h4r.Item) bool { return it.Kind == "commit" && str(it.Content, "sha") != "" }},
		{"incidents", 2, 0, func(it h4r.Item) bool { return it.Kind == "incident" }},
		{"runbooks", 3, 0, func(it h4r.Item) bool { return it.Kind == "runbook" }},
		{"created within the last day", 2, 0, func(it h4r.Item) bool {
			return it.Metadata.CreatedAt.After(corpusDay.Add(-24 * time.Hour))
		}},
		{"older than 100 days", 1, 0, func(it h4r.Item) bool {
			return it.Metadata.CreatedAt.Before(corpusDay.Add(-100 * 24 * time.Hour))
		}},
		{"long items, over 1000 tokens delivered", 2, 0, func(it h4r.Item) bool {
			return deliveredTokens(t, counter, it) > 1000
		}},
		{"caused_by links", 5, 0, hasLink("caused_by")},
		{"fixes links", 5, 0, hasLink("fixes")},
		{"follows links", 5, 0, hasLink("follows")},
		{"similar_to links", 3, 0, hasLink("similar_to")},
		{"cites_precedent links", 3, 0, hasLink("cites_precedent")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n int
			for _, it := range items {
				if tt.is(it) {
					n++
				}
			}
			if n < tt.min || (tt.max > 0 && n > tt.max) {
				t.Errorf("%d items, want %d..%d (0: no limit)", n, tt.min, tt.max)
			}
		})
	}
}

func hasLink(typ string) func(h4r.Item) bool {
	return func(it h4r.Item) bool {
		return slices.ContainsFunc(it.Links, func(l h4r.Link) bool { return l.Type == typ })
	}
}

// The README's first request: playwright_healer, internal, groups [qa],
// "login test failures with selector issues", no filters, maxTokens 2500.
// The corpus must give that request something to show for every stage.
const firstQuery = "login test failures with selector issues"

// mentionsAll reports whether text holds every word of query as a word of
// its own (case-insensitive): such an item is a full-text candidate whatever
// the stemming, and ranks high on relevance.
func mentionsAll(text, query string) bool {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, q := range strings.Fields(query) {
		if !slices.Contains(words, q) {
			return false
		}
	}
	return true
}

// allowedForHealer asks the Go copy of the bundled policy (kept equal to
// the Rego by policy's agreement test) whether playwright_healer, internal,
// group qa, may see the item.
func allowedForHealer(t *testing.T, it h4r.Item) bool {
	t.Helper()
	healer := h4r.Specialist{Type: "specialist", ID: "playwright_healer", SecurityLevel: h4r.Internal, AuthorizedGroups: []string{"qa"}}
	d, err := policy.LocalRules{}.Decide(context.Background(), healer, &it)
	if err != nil {
		t.Fatal(err)
	}
	return d.Allow
}

func TestFirstQueryShowsEveryStage(t *testing.T) {
	items := mustItems(t)
	counter, err := tokens.New(tokens.CL100K)
	if err != nil {
		t.Fatal(err)
	}
	var matching []h4r.Item
	delivered := map[string]bool{}
	for _, it := range items {
		if mentionsAll(it.Text, firstQuery) {
			matching = append(matching, it)
			if allowedForHealer(t, it) {
				delivered[it.ID] = true
			}
		}
	}
	count := func(is func(h4r.Item) bool) int {
		n := 0
		for _, it := range matching {
			if is(it) {
				n++
			}
		}
		return n
	}
	tokensDelivered, longest := 0, 0
	for _, it := range matching {
		if delivered[it.ID] {
			n := deliveredTokens(t, counter, it)
			tokensDelivered += n
			longest = max(longest, n)
		}
	}
	edges := 0
	for _, it := range matching {
		for _, l := range it.Links {
			if delivered[it.ID] && delivered[l.Target] {
				edges++
			}
		}
	}
	tests := []struct {
		name string
		got  int
		min  int
	}{
		{"credential item is a candidate (dropped by policy)", count(func(it h4r.Item) bool { return it.Metadata.HasCredentials }), 1},
		{"sensitive item is a candidate (dropped by policy)", count(func(it h4r.Item) bool { return it.Metadata.SensitivityValue() > 0.7 }), 1},
		{"low-trust item is a candidate (dropped by policy)", count(func(it h4r.Item) bool { return it.Metadata.TrustValue() < 0.3 }), 1},
		{"security-only item is a candidate (dropped by policy)", count(func(it h4r.Item) bool {
			return slices.Contains(it.Metadata.RestrictedToGroups, "security")
		}), 1},
		{"personal data is delivered redacted", count(func(it h4r.Item) bool {
			return delivered[it.ID] && slices.Contains(it.Metadata.PIIFields, "$.content.personalData")
		}), 1},
		{"qa-only item is delivered to qa", count(func(it h4r.Item) bool {
			return delivered[it.ID] && slices.Contains(it.Metadata.RestrictedToGroups, "qa")
		}), 1},
		{"several test failures (retry_with_healing)", count(func(it h4r.Item) bool { return delivered[it.ID] && it.Kind == "test_failure" }), 3},
		{"a selector change (suggest_fix)", count(func(it h4r.Item) bool { return delivered[it.ID] && it.Kind == "selector_change" }), 1},
		{"a fix", count(func(it h4r.Item) bool { return delivered[it.ID] && it.Kind == "fix" }), 1},
		{"links among the delivered items (causal graph)", edges, 3},
		{"more tokens than the 2500 budget", tokensDelivered, 2501},
		{"one item that alone takes much of the budget", longest, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got < tt.min {
				t.Errorf("got %d, want at least %d", tt.got, tt.min)
			}
		})
	}
}

// query is one labelled query of testdata/queries.json.
type query struct {
	ID       string   `json:"id"`
	Text     string   `json:"text"`
	Relevant []string `json:"relevant"`
}

func TestLabelledQueries(t *testing.T) {
	data, err := os.ReadFile("testdata/queries.json")
	if err != nil {
		t.Fatal(err)
	}
	var queries []query
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&queries); err != nil {
		t.Fatalf("decoding testdata/queries.json: %v", err)
	}
	if len(queries) < 12 || len(queries) > 20 {
		t.Errorf("%d labelled queries, want 12 to 20", len(queries))
	}
	ids := map[string]bool{}
	for _, it := range mustItems(t) {
		ids[it.ID] = true
	}
	seen := map[string]bool{}
	for _, q := range queries {
		if q.ID == "" || seen[q.ID] {
			t.Errorf("query id %q is empty or used twice", q.ID)
		}
		seen[q.ID] = true
		if strings.TrimSpace(q.Text) == "" {
			t.Errorf("query %s has no text", q.ID)
		}
		if len(q.Relevant) == 0 {
			t.Errorf("query %s labels no relevant item", q.ID)
		}
		for i, id := range q.Relevant {
			if !ids[id] {
				t.Errorf("query %s: relevant item %s is not in the corpus", q.ID, id)
			}
			if slices.Contains(q.Relevant[:i], id) {
				t.Errorf("query %s lists %s twice", q.ID, id)
			}
		}
	}
}
