package pack

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/affordance"
)

func TestResults(t *testing.T) {
	in := fixtureInput(t)
	tests := []struct {
		name          string
		includeScores bool
	}{
		{name: "with scores", includeScores: true},
		{name: "without scores", includeScores: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in.IncludeScores = tt.includeScores
			p := NewBuilder(WithClock(fixedClock)).Build(in)
			var wantIDs []string
			for _, e := range in.Entries {
				if e.Reason == h4r.ReasonKept {
					wantIDs = append(wantIDs, e.Ranked.Candidate.Item.ID)
				}
			}
			var gotIDs []string
			for _, r := range p.Results {
				gotIDs = append(gotIDs, r.ID)
			}
			if !slices.Equal(gotIDs, wantIDs) {
				t.Fatalf("result ids %v, want the kept entries in rank order %v", gotIDs, wantIDs)
			}
			for _, r := range p.Results {
				e := findEntry(in.Entries, r.ID)
				if r.Score != e.Ranked.Score || r.Explanation != e.Ranked.Explanation || r.Reason != h4r.ReasonKept {
					t.Errorf("%s: score/explanation/reason = %v/%q/%q, want the entry's", r.ID, r.Score, r.Explanation, r.Reason)
				}
				wantContent := e.Delivered.Content
				if wantContent == nil {
					wantContent = map[string]any{} // content is always an object
				}
				if r.Text != e.Delivered.Text || !reflect.DeepEqual(r.Content, wantContent) || r.Kind != e.Delivered.Kind {
					t.Errorf("%s: text/content/kind are not the delivered ones", r.ID)
				}
				if got := r.Signals != nil; got != tt.includeScores {
					t.Errorf("%s: signals present = %v, want %v", r.ID, got, tt.includeScores)
				} else if got && *r.Signals != e.Ranked.Signals {
					t.Errorf("%s: signals %v, want %v", r.ID, *r.Signals, e.Ranked.Signals)
				}
				m := e.Ranked.Candidate.Item.Metadata
				want := h4r.ResultMetadata{
					Source:         sourceOf(e.Ranked.Candidate),
					CreatedAt:      m.CreatedAt.Format(time.RFC3339),
					Redacted:       e.Redacted,
					RedactedFields: e.RedactedFields,
					ByteSize:       e.Bytes,
					Tokens:         e.Tokens,
					Version:        m.Version,
				}
				if !reflect.DeepEqual(r.Metadata, want) {
					t.Errorf("%s: metadata %+v, want %+v", r.ID, r.Metadata, want)
				}
			}
		})
	}
}

// sourceOf spells out the expected source labels of the fixture, so that
// the test does not just call the function under test.
func sourceOf(c *h4r.Candidate) string {
	return map[string]string{
		"mem-001": "fulltext+vector+graph", "mem-002": "fulltext+vector", "mem-003": "fulltext+vector+graph",
		"mem-006": "graph",
	}[c.Item.ID]
}

func findEntry(es []Entry, id string) Entry {
	for _, e := range es {
		if e.Ranked.Candidate.Item.ID == id {
			return e
		}
	}
	return Entry{}
}

func TestRedactedResult(t *testing.T) {
	p := NewBuilder(WithClock(fixedClock)).Build(fixtureInput(t))
	i := slices.IndexFunc(p.Results, func(r h4r.Result) bool { return r.ID == "mem-003" })
	if i < 0 {
		t.Fatal("mem-003 missing from the results")
	}
	r := p.Results[i]
	if r.Content["personalData"] != h4r.RedactionMarker || !r.Metadata.Redacted || !slices.Equal(r.Metadata.RedactedFields, []string{"$.content.personalData"}) {
		t.Errorf("mem-003 = %+v, want personalData redacted and reported", r)
	}
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), "dev@example.com") {
		t.Error("the redacted e-mail address reached the pack")
	}
}

// TestExplainabilityItems: with explain "all", an audit caller gets the
// verdict on every ranked candidate; any other caller only on those the
// policy let through (mem-004 was denied), ranked among themselves, with
// generators counting only those. By default only the kept items are
// explained, with the ranks they have in that list.
func TestExplainabilityItems(t *testing.T) {
	tests := []struct {
		name    string
		audit   bool
		all     bool
		ids     []string // explained, in rank order
		ranks   []int
		sources map[string]int
	}{
		{"audit, all", true, true, []string{"mem-004", "mem-001", "mem-003", "mem-002", "mem-006", "mem-005"}, []int{1, 2, 3, 4, 5, 6},
			map[string]int{h4r.GenFullText: 5, h4r.GenVector: 4, h4r.GenGraph: 3}},
		{"no audit, all", false, true, []string{"mem-001", "mem-003", "mem-002", "mem-006", "mem-005"}, []int{1, 2, 3, 4, 5},
			map[string]int{h4r.GenFullText: 4, h4r.GenVector: 3, h4r.GenGraph: 3}},
		{"audit, kept", true, false, []string{"mem-001", "mem-003", "mem-002", "mem-006"}, []int{2, 3, 4, 5},
			map[string]int{h4r.GenFullText: 5, h4r.GenVector: 4, h4r.GenGraph: 3}},
		{"no audit, kept", false, false, []string{"mem-001", "mem-003", "mem-002", "mem-006"}, []int{1, 2, 3, 4},
			map[string]int{h4r.GenFullText: 4, h4r.GenVector: 3, h4r.GenGraph: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fixtureInput(t)
			in.Audit, in.ExplainAll = tt.audit, tt.all
			p := NewBuilder(WithClock(fixedClock)).Build(in)
			if p.TotalCount != len(in.Entries) || p.Explainability.Slicing.TotalDroppedPolicy != 1 {
				t.Errorf("total_count = %d, totalDroppedPolicy %d; want %d and 1: counts stay", p.TotalCount, p.Explainability.Slicing.TotalDroppedPolicy, len(in.Entries))
			}
			byID := map[string]Entry{}
			for _, e := range in.Entries {
				byID[e.Ranked.Candidate.Item.ID] = e
			}
			var got []string
			reasons := map[string]string{}
			for i, it := range p.Explainability.Items {
				e := byID[it.ID]
				rank := 0
				if i < len(tt.ranks) {
					rank = tt.ranks[i]
				}
				want := h4r.ItemExplanation{
					ID: it.ID, Rank: rank, Score: e.Ranked.Score, Signals: e.Ranked.Signals,
					Reason: e.Reason, Detail: e.Detail, Redacted: e.Redacted, Explanation: e.Ranked.Explanation,
				}
				if !reflect.DeepEqual(it, want) {
					t.Errorf("item %d = %+v, want %+v", i, it, want)
				}
				got = append(got, it.ID)
				reasons[it.ID] = it.Reason
			}
			if !slices.Equal(got, tt.ids) {
				t.Errorf("explained %v, want %v", got, tt.ids)
			}
			wantReasons := map[string]string{"mem-001": "kept", "mem-002": "kept", "mem-003": "kept", "mem-004": "policy", "mem-005": "budget_tokens", "mem-006": "kept"}
			for id, r := range reasons {
				if wantReasons[id] != r {
					t.Errorf("%s: reason %s, want %s", id, r, wantReasons[id])
				}
			}
			for name, n := range tt.sources {
				if p.Sources[name].Candidates != n || p.Sources[name].Ms != in.Sources[name].Ms {
					t.Errorf("sources[%s] = %+v, want %d candidates and the generator's time", name, p.Sources[name], n)
				}
			}
			if b, _ := json.Marshal(p); !tt.audit && strings.Contains(string(b), "mem-004") {
				t.Error("the denied item is named in the pack of a caller that may not audit")
			}
		})
	}
}

func TestCausalGraph(t *testing.T) {
	in := fixtureInput(t)
	tests := []struct {
		name     string
		builder  []Option
		override *bool
		want     bool
	}{
		{name: "on by default", want: true},
		{name: "off in the builder", builder: []Option{WithIncludeGraph(false)}, want: false},
		{name: "off in the builder, asked by the request", builder: []Option{WithIncludeGraph(false)}, override: boolPtr(true), want: true},
		{name: "on in the builder, declined by the request", override: boolPtr(false), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in.IncludeGraph = tt.override
			g := NewBuilder(append([]Option{WithClock(fixedClock)}, tt.builder...)...).Build(in).Explainability.CausalGraph
			if (g != nil) != tt.want {
				t.Fatalf("graph present = %v, want %v", g != nil, tt.want)
			}
			if g == nil {
				return
			}
			var nodes []string
			for _, n := range g.Nodes {
				nodes = append(nodes, n.ID+":"+n.Kind)
			}
			slices.Sort(nodes)
			if want := []string{"mem-001:test_failure", "mem-002:test_failure", "mem-003:selector_change", "mem-006:runbook"}; !slices.Equal(nodes, want) {
				t.Errorf("nodes %v, want the kept items %v", nodes, want)
			}
			// mem-004 → mem-001 (source dropped) and mem-006 → mem-005
			// (target dropped) must not appear.
			wantEdges := []h4r.GraphEdge{
				{Source: "mem-001", Target: "mem-003", Type: "caused_by", Strength: 0.9},
				{Source: "mem-003", Target: "mem-001", Type: "fixes", Strength: 1},
			}
			edges := slices.Clone(g.Edges)
			slices.SortFunc(edges, func(a, b h4r.GraphEdge) int { return strings.Compare(a.Source, b.Source) })
			if !reflect.DeepEqual(edges, wantEdges) {
				t.Errorf("edges %+v, want %+v", edges, wantEdges)
			}
		})
	}
}

func TestAffordancesFromKeptOnly(t *testing.T) {
	withContent := func(e Entry, kv map[string]any) Entry {
		e.Ranked.Candidate.Item.Content = kv
		if e.Delivered != nil {
			e.Delivered.Content = kv
		}
		return e
	}
	lowRelevance := func(e Entry) Entry { e.Ranked.Signals[h4r.Relevance] = 0.1; return e }
	tests := []struct {
		name    string
		entries []Entry
		rules   []affordance.Rule
		want    map[string][]string // type → evidence ids
	}{
		{
			name:    "a kept critical item escalates",
			entries: []Entry{kept("a", "Production outage since noon.")},
			want:    map[string][]string{affordance.TypeEscalateToHuman: {"a"}},
		},
		{
			name:    "a dropped critical item does not",
			entries: []Entry{dropped("x", "Production outage since noon."), kept("a", "All quiet.")},
			want:    map[string][]string{},
		},
		{
			name: "dropped failures do not count toward several failures",
			entries: []Entry{
				entry("f1", "test_failure", "spec one broke", h4r.ReasonKept, 0.9),
				entry("f2", "test_failure", "spec two broke", h4r.ReasonBudgetItems, 0.9),
			},
			want: map[string][]string{},
		},
		{
			name: "relevance is the relevance signal of kept items",
			entries: []Entry{
				lowRelevance(kept("a", "barely related")),
				dropped("x", "very related"), // relevance 1, but dropped
			},
			want: map[string][]string{affordance.TypeRequestMoreContext: nil},
		},
		{
			name: "redacted content is not a parameter",
			entries: []Entry{func() Entry {
				e := withContent(entry("s", "selector_change", "renamed", h4r.ReasonKept, 0.9), map[string]any{"selector": "#secret"})
				e.Delivered.Content = map[string]any{"selector": h4r.RedactionMarker}
				return e
			}()},
			want: map[string][]string{affordance.TypeSuggestFix: {"s"}},
		},
		{
			name:    "custom rules replace the defaults",
			entries: []Entry{kept("a", "Production outage since noon."), entry("b", "deploy", "deploy 12", h4r.ReasonKept, 0.9)},
			rules: []affordance.Rule{{Type: "roll_back", Description: "roll back the deploy",
				Match: affordance.Match{Kinds: []string{"deploy"}}, Confidence: affordance.Confidence{Base: 0.5}}},
			want: map[string][]string{"roll_back": {"b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{WithClock(fixedClock)}
			if tt.rules != nil {
				opts = append(opts, WithAffordanceRules(tt.rules))
			}
			p := NewBuilder(opts...).Build(Input{Query: "q", Entries: tt.entries})
			got := map[string][]string{}
			for _, a := range p.Explainability.Affordances {
				got[a.Type] = a.Evidence
				if v, ok := a.Parameters["selectors"]; ok {
					t.Errorf("%s carries selectors %v taken from redacted content", a.Type, v)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("affordances %v, want %v", got, tt.want)
			}
			if want := slices.Sorted(mapsKeys(tt.want)); !slices.Equal(slices.Sorted(slices.Values(p.AgentSlice.Actions)), want) {
				t.Errorf("agent slice actions %v, want %v", p.AgentSlice.Actions, want)
			}
		})
	}
}

func mapsKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestFixtureAffordances(t *testing.T) {
	p := NewBuilder(WithClock(fixedClock)).Build(fixtureInput(t))
	got := map[string]h4r.Affordance{}
	for _, a := range p.Explainability.Affordances {
		got[a.Type] = a
	}
	// mem-004 (dropped) mentions an outage: no escalation.
	if _, ok := got[affordance.TypeEscalateToHuman]; ok {
		t.Error("escalate_to_human fired on a dropped item")
	}
	retry, ok := got[affordance.TypeRetryWithHealing]
	if !ok || retry.Confidence != 0.7 || !reflect.DeepEqual(retry.Parameters["affectedTests"], []string{"login-spec-001", "checkout-spec-004"}) {
		t.Errorf("retry_with_healing = %+v, want 0.7 over the two kept failures", retry)
	}
	fix, ok := got[affordance.TypeSuggestFix]
	if !ok || !reflect.DeepEqual(fix.Parameters["selectors"], []string{"#login-button", "#sign-in"}) {
		t.Errorf("suggest_fix = %+v, want both selectors", fix)
	}
}

func TestAgentSlice(t *testing.T) {
	in := fixtureInput(t)
	p := NewBuilder(WithClock(fixedClock)).Build(in)
	s := p.AgentSlice
	var ids []string
	for _, r := range p.Results {
		ids = append(ids, r.ID)
	}
	var actions []string
	for _, a := range p.Explainability.Affordances {
		actions = append(actions, a.Type)
	}
	want := h4r.AgentSlice{SpecialistID: "playwright_healer", SecurityLevel: "internal", Summary: p.Explainability.TLDR.Text, ItemIDs: ids, Actions: actions}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("agent slice %+v, want %+v", s, want)
	}
	if s.Summary == "" || len(s.Actions) == 0 {
		t.Errorf("the fixture should give a summary and actions, got %+v", s)
	}
}

func TestEmptyPackMarshalsLists(t *testing.T) {
	// No rules: with the defaults an empty pack asks for more context.
	p := NewBuilder(WithClock(fixedClock), WithAffordanceRules(nil)).Build(Input{Query: "anything"})
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Status         string          `json:"status"`
		Results        json.RawMessage `json:"results"`
		Sources        json.RawMessage `json:"sources"`
		SourceStats    json.RawMessage `json:"sourceStats"`
		AgentSlice     map[string]json.RawMessage
		Explainability struct {
			Affordances json.RawMessage `json:"affordances"`
			Warnings    json.RawMessage `json:"warnings"`
			Items       json.RawMessage `json:"items"`
			CausalGraph struct {
				Nodes, Edges json.RawMessage
			} `json:"causalGraph"`
			TLDR struct {
				Sentences, Citations json.RawMessage
			} `json:"tldr"`
		} `json:"explainability"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	x := doc.Explainability
	for name, raw := range map[string]json.RawMessage{
		"results": doc.Results, "affordances": x.Affordances, "warnings": x.Warnings, "items": x.Items,
		"tldr.sentences": x.TLDR.Sentences, "tldr.citations": x.TLDR.Citations,
		"causalGraph.nodes": x.CausalGraph.Nodes, "causalGraph.edges": x.CausalGraph.Edges,
		"agentSlice.itemIds": doc.AgentSlice["itemIds"], "agentSlice.actions": doc.AgentSlice["actions"],
	} {
		if string(raw) != "[]" {
			t.Errorf("%s = %s, want []", name, raw)
		}
	}
	if string(doc.Sources) != "[]" || string(doc.SourceStats) != "{}" {
		t.Errorf("sources, sourceStats = %s, %s, want [] and {}", doc.Sources, doc.SourceStats)
	}
	if doc.Status != h4r.StatusOK {
		t.Errorf("status = %q, want %q by default", doc.Status, h4r.StatusOK)
	}
}

func TestStatusAndWarnings(t *testing.T) {
	in := Input{Query: "q", Status: h4r.StatusDegraded, Warnings: []string{"generator vector failed: timeout"}}
	p := NewBuilder(WithClock(fixedClock)).Build(in)
	if p.Status != h4r.StatusDegraded {
		t.Errorf("status = %q, want degraded", p.Status)
	}
	if !slices.Equal(p.Explainability.Warnings, in.Warnings) {
		t.Errorf("warnings = %q, want %q", p.Explainability.Warnings, in.Warnings)
	}
}

func TestKeptWithoutDeliveredIsLeftOut(t *testing.T) {
	bad := kept("raw", "unredacted secret text")
	bad.Delivered = nil
	p := NewBuilder(WithClock(fixedClock)).Build(Input{Query: "secret", Entries: []Entry{bad, kept("ok", "a secret handshake")}, ExplainAll: true})
	if len(p.Results) != 1 || p.Results[0].ID != "ok" {
		t.Errorf("results %+v, want only the delivered item", p.Results)
	}
	if len(p.Explainability.Warnings) != 1 || !strings.Contains(p.Explainability.Warnings[0], "raw") {
		t.Errorf("warnings %q, want one naming the item", p.Explainability.Warnings)
	}
	if b, _ := json.Marshal(p); strings.Contains(string(b), "unredacted") {
		t.Error("the raw text reached the pack")
	}
	if got := p.Explainability.Items; len(got) != 1 || got[0].ID != "ok" || got[0].Reason != h4r.ReasonKept || got[0].Rank != 1 {
		t.Errorf("explanations %+v, want only the delivered item", got)
	}
	p = NewBuilder(WithClock(fixedClock)).Build(Input{Query: "secret", Entries: []Entry{bad, kept("ok", "a secret handshake")}, Audit: true, ExplainAll: true})
	if got := p.Explainability.Items[0]; got.ID != "raw" || got.Reason != h4r.ReasonPolicy {
		t.Errorf("audit explanation of the undeliverable item = %+v, want reason policy", got)
	}
	if got := p.Explainability.Items[1]; got.ID != "ok" || got.Reason != h4r.ReasonKept {
		t.Errorf("audit explanation of the delivered item = %+v, want reason kept", got)
	}
}

// steppingClock returns times that advance by step on every call.
func steppingClock(start time.Time, step time.Duration) func() time.Time {
	next := start
	return func() time.Time {
		t := next
		next = next.Add(step)
		return t
	}
}

func TestTimings(t *testing.T) {
	tests := []struct {
		name  string
		in    h4r.Timings
		start time.Time
		want  h4r.Timings
	}{
		{
			name:  "total from the caller's start to the end of Build",
			in:    h4r.Timings{CandidateMs: 10, RankingMs: 2, SlicingMs: 3},
			start: fixedNow.Add(-20 * time.Millisecond),
			// Build reads the clock at fixedNow and fixedNow+5ms.
			want: h4r.Timings{CandidateMs: 10, RankingMs: 2, RetrievalMs: 12, SlicingMs: 3, SummarizationMs: 5, TotalMs: 25},
		},
		{
			name:  "a given retrieval time is kept",
			in:    h4r.Timings{CandidateMs: 10, RankingMs: 2, RetrievalMs: 12.5},
			start: fixedNow,
			want:  h4r.Timings{CandidateMs: 10, RankingMs: 2, RetrievalMs: 12.5, SummarizationMs: 5, TotalMs: 5},
		},
		{
			name: "no start: the sum of the stages",
			in:   h4r.Timings{CandidateMs: 1, RankingMs: 1, SlicingMs: 1},
			want: h4r.Timings{CandidateMs: 1, RankingMs: 1, RetrievalMs: 2, SlicingMs: 1, SummarizationMs: 5, TotalMs: 8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewBuilder(WithClock(steppingClock(fixedNow, 5*time.Millisecond)))
			p := b.Build(Input{Query: "q", Timings: tt.in, Start: tt.start})
			if p.Explainability.Timings != tt.want {
				t.Errorf("timings %+v, want %+v", p.Explainability.Timings, tt.want)
			}
			if p.QueryDurationMs != tt.want.TotalMs {
				t.Errorf("query_duration_ms = %v, want %v", p.QueryDurationMs, tt.want.TotalMs)
			}
		})
	}
}

func TestBuildDoesNotModifyInput(t *testing.T) {
	in := fixtureInput(t)
	in.Warnings = make([]string, 1, 8) // room to append into
	in.Warnings[0] = "w"
	bad := kept("raw", "x")
	bad.Delivered = nil
	in.Entries = append(in.Entries, bad)
	NewBuilder(WithClock(fixedClock)).Build(in)
	if got := in.Warnings[:cap(in.Warnings)][1]; got != "" {
		t.Errorf("Build wrote %q into the caller's warnings array", got)
	}
}

func TestRedactionMarker(t *testing.T) {
	redactedSelector := func(id, selector string) Entry {
		e := entry(id, "selector_change", "The selector "+selector+" broke. The login selector moved.", h4r.ReasonKept, 0.9)
		e.Delivered.Content = map[string]any{"selector": selector, "test": []any{"login-spec", "x " + selector}}
		e.Redacted = true
		return e
	}
	tests := []struct {
		name          string
		builder       []Option
		entries       []Entry
		wantSentences []string
		wantSelectors any
		wantTests     any
	}{
		{
			name:          "default marker",
			entries:       []Entry{redactedSelector("a", "[REDACTED]")},
			wantSentences: []string{"The login selector moved."},
		},
		{
			name:          "custom marker",
			builder:       []Option{WithRedactionMarker("***")},
			entries:       []Entry{redactedSelector("a", "***")},
			wantSentences: []string{"The login selector moved."},
		},
		{
			name:          "another marker is just text",
			builder:       []Option{WithRedactionMarker("***")},
			entries:       []Entry{redactedSelector("a", "[REDACTED]")},
			wantSentences: []string{"The login selector moved.", "The selector [REDACTED] broke."},
			wantSelectors: []string{"[REDACTED]"},
			wantTests:     []string{"login-spec", "x [REDACTED]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules := append(affordance.DefaultRules(), affordance.Rule{Type: "run", Match: affordance.Match{Kinds: []string{"selector_change"}},
				Confidence: affordance.Confidence{Base: 0.1}, Params: []affordance.Param{{Name: "tests", ContentKey: "test"}}})
			opts := append([]Option{WithClock(fixedClock), WithAffordanceRules(rules)}, tt.builder...)
			p := NewBuilder(opts...).Build(Input{Query: "login selector", Entries: tt.entries})
			var sentences []string
			for _, s := range p.Explainability.TLDR.Sentences {
				sentences = append(sentences, s.Text)
			}
			if !slices.Equal(sentences, tt.wantSentences) {
				t.Errorf("TL;DR %q, want %q", sentences, tt.wantSentences)
			}
			params := map[string]map[string]any{}
			for _, a := range p.Explainability.Affordances {
				params[a.Type] = a.Parameters
			}
			if got := params[affordance.TypeSuggestFix]["selectors"]; !reflect.DeepEqual(got, tt.wantSelectors) {
				t.Errorf("selectors %v, want %v", got, tt.wantSelectors)
			}
			if got := params["run"]["tests"]; !reflect.DeepEqual(got, tt.wantTests) {
				t.Errorf("tests %v, want %v (a list holding the marker is left out whole)", got, tt.wantTests)
			}
		})
	}
}
