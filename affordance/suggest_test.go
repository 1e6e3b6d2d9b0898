package affordance

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kljensen/snowball/english"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/words"
)

// fired is the part of an affordance the tests compare: everything but the
// description text.
type fired struct {
	Type       string
	Confidence float64
	Evidence   []string
	Parameters map[string]any
}

func project(as []h4r.Affordance) []fired {
	out := []fired{}
	for _, a := range as {
		out = append(out, fired{a.Type, a.Confidence, a.Evidence, a.Parameters})
	}
	return out
}

// ev is an evidence item relevant enough not to trigger
// request_more_context.
func ev(id, kind, text string) Evidence {
	return Evidence{ID: id, Kind: kind, Text: text, Relevance: 0.9}
}

func withContent(e Evidence, kv ...any) Evidence {
	e.Content = map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		e.Content[kv[i].(string)] = kv[i+1]
	}
	return e
}

func withMeta(e Evidence, key string, v any) Evidence {
	e.Metadata = map[string]any{key: v}
	return e
}

func withTags(e Evidence, tags ...string) Evidence {
	e.Tags = tags
	return e
}

func TestDefaultRules(t *testing.T) {
	failure := func(id, test string) Evidence {
		return withContent(ev(id, "test_failure", test+" failed: timeout waiting for page"), "test", test)
	}
	tests := []struct {
		name     string
		evidence []Evidence
		want     []fired
	}{
		{
			name:     "one test failure is not several",
			evidence: []Evidence{failure("f1", "login-spec-001")},
			want:     []fired{},
		},
		{
			name:     "two failures: 0.5 + 0.1 × 2",
			evidence: []Evidence{failure("f1", "login-spec-001"), ev("x", "note", "unrelated note"), failure("f2", "cart-spec-002")},
			want: []fired{{TypeRetryWithHealing, 0.7, []string{"f1", "f2"},
				map[string]any{"affectedTests": []string{"login-spec-001", "cart-spec-002"}}}},
		},
		{
			name: "status=failed counts as a failure, status=passed does not",
			evidence: []Evidence{
				failure("f1", "a-spec"),
				withMeta(withContent(ev("r1", "test_run", "run of b-spec"), "test", "b-spec"), "status", "failed"),
				withMeta(ev("r2", "test_run", "run of c-spec"), "status", "passed"),
			},
			want: []fired{{TypeRetryWithHealing, 0.7, []string{"f1", "r1"},
				map[string]any{"affectedTests": []string{"a-spec", "b-spec"}}}},
		},
		{
			name:     "three failures of the same test: 0.8, the test listed once",
			evidence: []Evidence{failure("f1", "a-spec"), failure("f2", "a-spec"), failure("f3", "a-spec")},
			want:     []fired{{TypeRetryWithHealing, 0.8, []string{"f1", "f2", "f3"}, map[string]any{"affectedTests": []string{"a-spec"}}}},
		},
		{
			name: "five failures are capped at 0.95",
			evidence: []Evidence{failure("f1", "a"), failure("f2", "b"), failure("f3", "c"),
				failure("f4", "d"), failure("f5", "e")},
			want: []fired{{TypeRetryWithHealing, 0.95, []string{"f1", "f2", "f3", "f4", "f5"},
				map[string]any{"affectedTests": []string{"a", "b", "c", "d", "e"}}}},
		},
		{
			name:     "selector change by kind",
			evidence: []Evidence{withContent(ev("s1", "selector_change", "button renamed"), "selector", "#login-button")},
			want:     []fired{{TypeSuggestFix, 0.85, []string{"s1"}, map[string]any{"selectors": []string{"#login-button"}}}},
		},
		{
			name:     "selector by tag, case-insensitive, no selector in content",
			evidence: []Evidence{withTags(ev("s1", "note", "the page layout changed"), "Selector")},
			want:     []fired{{TypeSuggestFix, 0.85, []string{"s1"}, nil}},
		},
		{
			name:     "selector keyword as a whole word",
			evidence: []Evidence{ev("s1", "note", "The SELECTOR #nav no longer matches"), ev("s2", "note", "three selectors were renamed")},
			want:     []fired{{TypeSuggestFix, 0.85, []string{"s1"}, nil}},
		},
		{
			name: "flaky behaviour by kind, tag and keywords",
			evidence: []Evidence{
				withContent(ev("k1", "flaky_test", "retry passed"), "test", "search-spec"),
				withTags(ev("k2", "note", "timing issue"), "flaky"),
				withContent(ev("k3", "note", "Fails intermittently on CI"), "test", []any{"cart-spec", "search-spec"}),
				ev("k4", "note", "an intermittent 502"),
				ev("k5", "note", "flakyness report"), // not a whole word
			},
			want: []fired{{TypeRerunTests, 0.75, []string{"k1", "k2", "k3", "k4"},
				map[string]any{"tests": []string{"search-spec", "cart-spec"}}}},
		},
		{
			name:     "no evidence asks for more context",
			evidence: nil,
			want:     []fired{{TypeRequestMoreContext, 0.6, nil, map[string]any{"bestRelevance": 0.0, "threshold": 0.3}}},
		},
		{
			name:     "best relevance under 0.3 asks for more context",
			evidence: []Evidence{{ID: "a", Text: "something", Relevance: 0.29}, {ID: "b", Text: "other", Relevance: 0.1}},
			want:     []fired{{TypeRequestMoreContext, 0.6, nil, map[string]any{"bestRelevance": 0.29, "threshold": 0.3}}},
		},
		{
			name:     "best relevance at the threshold does not",
			evidence: []Evidence{{ID: "a", Text: "something", Relevance: 0.3}, {ID: "b", Text: "other", Relevance: 0.1}},
			want:     []fired{},
		},
		{
			name: "critical keywords, phrases across punctuation and case",
			evidence: []Evidence{
				ev("c1", "note", "SEV1 declared"),
				ev("c2", "note", "possible data-loss in the orders table"),
				ev("c3", "note", "Production down since 10:00"),
				ev("c4", "note", "the production environment is down"), // not the phrase
				ev("c5", "note", "insecurity about the release date"),  // not the word
				ev("c6", "note", "security review pending"),
			},
			want: []fired{{TypeEscalateToHuman, 0.95, []string{"c1", "c2", "c3", "c6"}, nil}},
		},
		{
			name: "several rules fire, most confident first",
			evidence: []Evidence{
				withContent(ev("f1", "test_failure", "login failed: selector #login-button not found during outage"), "test", "login", "selector", "#login-button"),
				withContent(ev("f2", "test_failure", "checkout failed intermittently"), "test", "checkout"),
			},
			want: []fired{
				{TypeEscalateToHuman, 0.95, []string{"f1"}, nil},
				{TypeSuggestFix, 0.85, []string{"f1"}, map[string]any{"selectors": []string{"#login-button"}}},
				{TypeRerunTests, 0.75, []string{"f2"}, map[string]any{"tests": []string{"checkout"}}},
				{TypeRetryWithHealing, 0.7, []string{"f1", "f2"}, map[string]any{"affectedTests": []string{"login", "checkout"}}},
			},
		},
		{
			name: "empty and non-scalar parameter values are not collected",
			evidence: []Evidence{
				withContent(ev("s1", "selector_change", "a"), "selector", map[string]any{"css": "#x"}),
				withContent(ev("s2", "selector_change", "b"), "selector", ""),
				withContent(ev("s3", "selector_change", "c"), "selector", "#ok"),
				withContent(ev("s4", "selector_change", "d"), "selector", 42.0),
			},
			want: []fired{{TypeSuggestFix, 0.85, []string{"s1", "s2", "s3", "s4"}, map[string]any{"selectors": []string{"#ok", "42"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := project(Suggest(DefaultRules(), tt.evidence))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Suggest\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSuggestDescriptionsAndNonNil(t *testing.T) {
	got := Suggest(DefaultRules(), []Evidence{ev("a", "flaky_test", "x")})
	if len(got) != 1 || got[0].Description == "" {
		t.Fatalf("Suggest = %+v, want one affordance with a description", got)
	}
	none := Suggest(nil, nil)
	if none == nil {
		t.Fatal("Suggest with no rules returned nil, want an empty slice")
	}
	if b, _ := json.Marshal(none); string(b) != "[]" {
		t.Errorf("no affordances marshal to %s, want []", b)
	}
}

func TestCustomRuleAsData(t *testing.T) {
	data, err := os.ReadFile("testdata/custom_rules.json")
	if err != nil {
		t.Fatal(err)
	}
	custom, err := ParseRules(data)
	if err != nil {
		t.Fatalf("ParseRules: %v", err)
	}
	rules := append(DefaultRules(), custom...)
	tests := []struct {
		name     string
		evidence []Evidence
		want     []fired
	}{
		{
			name:     "matches by kind",
			evidence: []Evidence{withContent(ev("b1", "bug_report", "checkout button broken"), "ticket", "JIRA-12")},
			want:     []fired{{"open_ticket", 0.6, []string{"b1"}, map[string]any{"tickets": []string{"JIRA-12"}}}},
		},
		{
			name: "matches by metadata, confidence capped at 0.9",
			evidence: []Evidence{
				withMeta(ev("b1", "note", "a"), "priority", "P1"),
				withMeta(ev("b2", "note", "b"), "priority", "p1"),
				withMeta(ev("b3", "note", "c"), "priority", "p1"),
				withMeta(ev("b4", "note", "d"), "priority", "p2"),
			},
			want: []fired{{"open_ticket", 0.9, []string{"b1", "b2", "b3"}, nil}},
		},
		{
			name:     "does not match other items",
			evidence: []Evidence{ev("n1", "note", "all good")},
			want:     []fired{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := project(Suggest(rules, tt.evidence))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Suggest\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestOrderByConfidenceThenType(t *testing.T) {
	rules := []Rule{
		{Type: "zeta", Match: Match{Kinds: []string{"k"}}, Confidence: Confidence{Base: 0.5}},
		{Type: "alpha", Match: Match{Kinds: []string{"k"}}, Confidence: Confidence{Base: 0.5}},
		{Type: "top", Match: Match{Kinds: []string{"k"}}, Confidence: Confidence{Base: 0.2, PerMatch: 0.4}},
		{Type: "never", Match: Match{Kinds: []string{"other"}}, Confidence: Confidence{Base: 1}},
	}
	var types []string
	for _, a := range Suggest(rules, []Evidence{ev("a", "k", "")}) {
		types = append(types, a.Type)
	}
	if want := []string{"top", "alpha", "zeta"}; !slices.Equal(types, want) {
		t.Errorf("order %v, want %v", types, want)
	}
}

func TestConfidence(t *testing.T) {
	tests := []struct {
		name string
		c    Confidence
		n    int
		want float64
	}{
		{name: "base only", c: Confidence{Base: 0.85}, n: 1, want: 0.85},
		{name: "per match, no floating noise", c: Confidence{Base: 0.5, PerMatch: 0.1, Max: 0.95}, n: 3, want: 0.8},
		{name: "capped at max", c: Confidence{Base: 0.5, PerMatch: 0.1, Max: 0.95}, n: 10, want: 0.95},
		{name: "no max caps at 1", c: Confidence{Base: 0.5, PerMatch: 0.3}, n: 4, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.of(tt.n); got != tt.want {
				t.Errorf("confidence = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRuleValidate(t *testing.T) {
	valid := Rule{Type: "ok", Match: Match{Kinds: []string{"k"}}, Confidence: Confidence{Base: 0.5}}
	tests := []struct {
		name      string
		edit      func(r *Rule)
		wantField string // "" means valid
	}{
		{name: "valid", edit: func(*Rule) {}},
		{name: "pack-level rule without match", edit: func(r *Rule) { r.Match = Match{}; r.WhenBestRelevanceBelow = 0.2 }},
		{name: "missing type", edit: func(r *Rule) { r.Type = "" }, wantField: "rules[0].type"},
		{name: "type with spaces", edit: func(r *Rule) { r.Type = "do this" }, wantField: "rules[0].type"},
		{name: "negative min matches", edit: func(r *Rule) { r.MinMatches = -1 }, wantField: "rules[0].minMatches"},
		{name: "base above 1", edit: func(r *Rule) { r.Confidence.Base = 1.5 }, wantField: "rules[0].confidence.base"},
		{name: "negative per match", edit: func(r *Rule) { r.Confidence.PerMatch = -0.1 }, wantField: "rules[0].confidence.perMatch"},
		{name: "threshold above 1", edit: func(r *Rule) { r.WhenBestRelevanceBelow = 2 }, wantField: "rules[0].whenBestRelevanceBelow"},
		{name: "matches nothing", edit: func(r *Rule) { r.Match = Match{} }, wantField: "rules[0].match"},
		{name: "keyword without letters", edit: func(r *Rule) { r.Match.Keywords = []string{"ok", "--"} }, wantField: "rules[0].match.keywords[1]"},
		{name: "param without content key", edit: func(r *Rule) { r.Params = []Param{{Name: "tests"}} }, wantField: "rules[0].params[0].contentKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid
			tt.edit(&r)
			assertField(t, r.Validate("rules[0]"), tt.wantField)
		})
	}
	for i, r := range DefaultRules() {
		if err := r.Validate(fmt.Sprintf("default[%d]", i)); err != nil {
			t.Errorf("default rule %s: %v", r.Type, err)
		}
	}
}

func TestParseRules(t *testing.T) {
	tests := []struct {
		name      string
		json      string
		wantRules int
		wantField string
	}{
		{name: "empty list", json: `[]`, wantRules: 0},
		{name: "one rule", json: `[{"type":"x","match":{"tags":["t"]},"confidence":{"base":0.5}}]`, wantRules: 1},
		{name: "unknown field", json: `[{"type":"x","match":{"tags":["t"]},"confidence":{"base":0.5},"colour":1}]`, wantField: "rules[0].colour"},
		{name: "invalid rule names its index", json: `[{"type":"x","match":{"tags":["t"]},"confidence":{"base":0.5}},{"type":"y","match":{},"confidence":{"base":0.5}}]`, wantField: "rules[1].match"},
		{name: "not a list", json: `{"type":"x"}`, wantField: "rules"},
		{name: "malformed", json: `[{`, wantField: "rules[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := ParseRules([]byte(tt.json))
			assertField(t, err, tt.wantField)
			if err == nil && len(rules) != tt.wantRules {
				t.Errorf("got %d rules, want %d", len(rules), tt.wantRules)
			}
		})
	}
}

func assertField(t *testing.T, err error, wantField string) {
	t.Helper()
	if wantField == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var e *h4r.Error
	if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != wantField {
		t.Fatalf("error = %v, want invalid_argument on %s", err, wantField)
	}
}

func FuzzParseRules(f *testing.F) {
	defaults, _ := json.Marshal(DefaultRules())
	f.Add(defaults)
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"type":"x","match":{"keywords":["a b"]},"confidence":{"base":0.5,"max":2}}]`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRules(data)
		if err != nil {
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID {
				t.Fatalf("error is not invalid_argument: %v", err)
			}
			return
		}
		// Whatever parses applies without panicking and within [0, 1].
		for _, a := range Suggest(rules, []Evidence{ev("a", "k", string(data))}) {
			if a.Confidence < 0 || a.Confidence > 1 {
				t.Fatalf("confidence %v out of [0, 1] for %s", a.Confidence, a.Type)
			}
		}
	})
}

func FuzzKeywordMatch(f *testing.F) {
	f.Add("Production down: data-loss!", "data loss")
	f.Add("SEV1", "sev1")
	f.Add("ünïcode Ärger", "ärger")
	f.Add("", "x")
	f.Fuzz(func(t *testing.T, text, keyword string) {
		r := Rule{Type: "k", Match: Match{Keywords: []string{keyword}}, Confidence: Confidence{Base: 1}}
		got := len(Suggest([]Rule{r}, []Evidence{ev("a", "", text)})) == 1
		// A keyword found in the text is found in the text padded with
		// spaces and in upper case.
		padded := len(Suggest([]Rule{r}, []Evidence{ev("a", "", " "+strings.ToUpper(text)+" ")})) == 1
		if got && !padded && strings.EqualFold(strings.ToUpper(text), text) {
			t.Fatalf("keyword %q matches %q but not its padded upper-case form", keyword, text)
		}
	})
}

// TestSuggestForQuery: with a query, relevance is the share of its words
// an item holds, and an item sharing none triggers nothing, whatever its
// ranking relevance (fused scores make the best of poor candidates 1).
func TestSuggestForQuery(t *testing.T) {
	incident := Evidence{ID: "inc", Kind: "incident", Text: "Critical outage: the login selector broke in production", Relevance: 1}
	selector := Evidence{ID: "sel", Kind: "selector_change", Text: "Deploy 812 renamed the login button selector", Relevance: 0.9}
	flaky := Evidence{ID: "flk", Text: "checkout-spec-004 failed intermittently on CI", Relevance: 0.8}
	cases := []struct {
		name     string
		query    string
		evidence []Evidence
		want     map[string][]string // type -> evidence ids
	}{
		{"nonsense query: only more context", "zebra quantum marmalade", []Evidence{incident, selector},
			map[string][]string{TypeRequestMoreContext: nil}},
		{"words the evidence holds", "login selector", []Evidence{incident, selector},
			map[string][]string{TypeEscalateToHuman: {"inc"}, TypeSuggestFix: {"inc", "sel"}}},
		{"inflections match", "test failures", []Evidence{flaky},
			map[string][]string{TypeRerunTests: {"flk"}}},
		{"one word in many is poor evidence", "login latency regression budget dashboards", []Evidence{selector},
			map[string][]string{TypeSuggestFix: {"sel"}, TypeRequestMoreContext: nil}},
		{"unrelated item triggers nothing", "checkout failures", []Evidence{incident, flaky},
			map[string][]string{TypeRerunTests: {"flk"}}},
		{"part of a word is no keyword", "criticality review", []Evidence{{ID: "c", Text: "A criticality review of selectors", Relevance: 1}},
			map[string][]string{}},
		{"only stop words: ranking relevance", "what is it", []Evidence{selector},
			map[string][]string{TypeSuggestFix: {"sel"}}},
		{"no query: ranking relevance", "", []Evidence{incident},
			map[string][]string{TypeEscalateToHuman: {"inc"}, TypeSuggestFix: {"inc"}}},
	}
	// Stems remembered across calls change nothing: one memory shared by
	// every case, run twice, and one so small that it keeps forgetting.
	shared, tiny := NewStems(1<<10), NewStems(2)
	for round := range 2 {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%d", tc.name, round), func(t *testing.T) {
				for name, known := range map[string]*Stems{"none": nil, "shared": shared, "tiny": tiny} {
					got := map[string][]string{}
					for _, a := range SuggestWith(DefaultRules(), tc.query, tc.evidence, known) {
						got[a.Type] = a.Evidence
					}
					if !reflect.DeepEqual(got, tc.want) {
						t.Errorf("SuggestWith(%q, %s stems) = %v, want %v", tc.query, name, got, tc.want)
					}
				}
			})
		}
	}
	if n := len(tiny.stems); n > 2 {
		t.Errorf("a memory of 2 stems holds %d", n)
	}
}

// TestStemsConcurrent: calls sharing one memory of stems from many
// goroutines (run with -race) agree with calls that share none.
func TestStemsConcurrent(t *testing.T) {
	ev := []Evidence{
		{ID: "a", Text: "checkout-spec-004 failed intermittently on CI, retried twice"},
		{ID: "b", Text: "Critical outage: the login selector broke in production"},
		{ID: "c", Text: "Deploy 812 renamed the login button selectors and failures followed"},
	}
	queries := []string{"test failures", "login selector", "checkout retries", "production outage"}
	want := make([][]h4r.Affordance, len(queries))
	for i, q := range queries {
		want[i] = SuggestFor(DefaultRules(), q, ev)
	}
	known := NewStems(8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				q := (g + i) % len(queries)
				if got := SuggestWith(DefaultRules(), queries[q], ev, known); !reflect.DeepEqual(got, want[q]) {
					t.Errorf("query %q: got %v, want %v", queries[q], got, want[q])
					return
				}
			}
		})
	}
	wg.Wait()
}

// overlap is the share of the query's terms an item's words hold, stemmed
// alike, a stem of four letters or more also matching the stems it begins
// or that begin it; each term counts once however often it occurs.
func TestOverlap(t *testing.T) {
	for _, tc := range []struct {
		name, query, text string
		want              float64
	}{
		{"all_terms", "login selector", "the login selector broke", 1},
		{"half", "login checkout", "login failed again", 0.5},
		{"none", "login checkout", "nothing here", 0},
		{"stemmed_alike", "failures", "it failed", 1},
		{"prefix_both_ways", "deploying broken", "deploy broke", 1},
		{"four_letter_stem_prefix", "failed", "failures", 1},
		{"short_stems_exact_only", "cat", "category", 0},
		{"repeated_word_counts_once", "login checkout", "login login login", 0.5},
		{"term_found_late", "alpha omega", "alpha beta gamma delta omega", 1},
		{"many_terms", "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen", "seventeen one", 3.0 / 17}, // seventeen also holds seven
	} {
		t.Run(tc.name, func(t *testing.T) {
			terms := queryTerms(tc.query)
			stem := stemmer{memo: map[string]string{}}
			if got := overlap(stem, terms, words.Lower(tc.text)); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("overlap(%q, %q) = %v, want %v (terms %v)", tc.query, tc.text, got, tc.want, terms)
			}
		})
	}
}

// overlap stems only the words some term begins as: the others cannot
// match, and looking their stems up would be most of what judging relevance
// costs.
func TestOverlapStemsOnlyWordsATermBeginsAs(t *testing.T) {
	stem := stemmer{memo: map[string]string{}}
	terms := queryTerms("login failures")
	if got := overlap(stem, terms, words.Lower("the zebra failed to log in; no login")); got != 1 {
		t.Fatalf("overlap = %v, want 1", got)
	}
	for w := range stem.memo {
		if w[0] != 'l' && w[0] != 'f' {
			t.Errorf("%q was stemmed: no term begins with %q", w, w[:1])
		}
	}
}

// The premise of overlap's first-letter test: the stemmer changes a
// word's ending only, so that its stem begins with the word's first
// letter. Checked on every word of the demo corpus and on every word of
// up to four letters of an alphabet rich in the stemmer's suffixes.
func TestStemKeepsTheFirstLetter(t *testing.T) {
	check := func(w string) {
		if s := english.Stem(w, false); s == "" || s[0] != w[0] {
			t.Errorf("stem of %q is %q: not its first letter", w, s)
		}
	}
	corpus, err := os.ReadFile("../demo/items.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words.Lower(string(corpus)) {
		check(w)
	}
	const letters = "abdeilnsyé"
	var all func(prefix string, n int)
	all = func(prefix string, n int) {
		if prefix != "" {
			check(prefix)
		}
		if n == 0 {
			return
		}
		for _, r := range letters {
			all(prefix+string(r), n-1)
		}
	}
	all("", 4)
	for _, w := range []string{"ies", "ied", "sses", "yes", "yed", "ying", "skies", "dying", "eed", "eedly", "ing", "ingly", "ed"} {
		check(w)
	}
}
