package pack

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/affordance"
	"github.com/h4r/h4r/rank"
)

// DefaultTLDRSentences is the TL;DR length when neither the builder nor the
// request says (CONTEXT_PACK_TLDR_SENTENCES).
const DefaultTLDRSentences = 5

// Entry is one ranked candidate and what the slicer decided about it.
type Entry struct {
	Ranked         *rank.Ranked // the ranking's own, shared rather than copied: a pack holds a few hundred
	Reason, Detail string       // h4r.ReasonKept, or why it was left out (h4r.Reason*)
	Redacted       bool
	RedactedFields []string
	Delivered      *h4r.Delivered // the delivered (redacted) form; nil unless kept
	Bytes, Tokens  int            // size of the delivered form
}

// Input is everything a pack is built from.
type Input struct {
	RequestID  string
	Query      string
	Specialist h4r.Specialist
	Entries    []Entry // every ranked candidate, in rank order
	Slicing    h4r.SlicingStats
	Sources    map[string]h4r.SourceStats
	// Timings has the candidate, ranking and slicing times filled in; Build
	// adds summarization and the total, measured from Start.
	Timings       h4r.Timings
	Start         time.Time
	Weights       h4r.Weights // the normalised weights the ranking used
	Warnings      []string
	Status        string // h4r.StatusOK (default when empty) or h4r.StatusDegraded
	IncludeScores bool
	TLDRSentences *int  // the request's override of the builder's TL;DR length
	IncludeGraph  *bool // the request's override of the builder's graph setting
	// ExplainAll: explainability.items explains every entry the caller may
	// learn of, not only the kept ones (h4r.ExplainAll).
	ExplainAll bool
	// Audit: the caller may see what policy hid (h4r.Plan.Audit). Without
	// it, explainability.items and the per-generator counts cover only the
	// entries policy let through (kept, or left out by the budget); the
	// rest are counted in Slicing and nowhere named.
	Audit bool
}

// Builder assembles context packs. It holds only configuration, so one
// Builder serves concurrent requests.
type Builder struct {
	tldrSentences int
	includeGraph  bool
	rules         []affordance.Rule
	stems         *affordance.Stems // the rules' stems of words, across packs
	marker        string
	now           func() time.Time
}

// Option configures a Builder.
type Option func(*Builder)

// WithTLDRSentences sets how many sentences a TL;DR has when a request does
// not say (CONTEXT_PACK_TLDR_SENTENCES); 0 leaves the TL;DR empty.
func WithTLDRSentences(n int) Option { return func(b *Builder) { b.tldrSentences = max(n, 0) } }

// WithIncludeGraph sets whether packs carry the causal graph when a request
// does not say (CONTEXT_PACK_INCLUDE_GRAPH). The default is true.
func WithIncludeGraph(include bool) Option { return func(b *Builder) { b.includeGraph = include } }

// WithAffordanceRules sets the rules affordances come from (default
// affordance.DefaultRules()).
func WithAffordanceRules(rules []affordance.Rule) Option {
	return func(b *Builder) { b.rules = append([]affordance.Rule(nil), rules...) }
}

// WithRedactionMarker sets the marker the slicer replaces redacted values
// with (default h4r.RedactionMarker). Sentences and parameter values
// holding it stay out of the TL;DR and the affordances.
func WithRedactionMarker(m string) Option { return func(b *Builder) { b.marker = m } }

// WithClock sets the clock that times the build (default time.Now); tests
// fix it so that timings are stable.
func WithClock(now func() time.Time) Option { return func(b *Builder) { b.now = now } }

// stemsRemembered bounds the words whose stems a Builder keeps for its
// affordance rules: a few megabytes, a large vocabulary's worth.
const stemsRemembered = 1 << 16

// NewBuilder returns a Builder with the given options.
func NewBuilder(opts ...Option) *Builder {
	b := &Builder{
		tldrSentences: DefaultTLDRSentences,
		includeGraph:  true,
		rules:         affordance.DefaultRules(),
		stems:         affordance.NewStems(stemsRemembered),
		marker:        h4r.RedactionMarker,
		now:           time.Now,
	}
	for _, o := range opts {
		o(b)
	}
	if b.marker == "" {
		b.marker = h4r.RedactionMarker
	}
	return b
}

// Build assembles the pack. Results, warnings and affordances are never nil,
// so they marshal as [] rather than null.
func (b *Builder) Build(in Input) *h4r.Pack {
	began := b.now()
	warnings := append([]string{}, in.Warnings...)

	// Only kept entries with a delivered form feed results, TL;DR, graph
	// and affordances. A kept entry without one is a caller bug; leaving it
	// out is the only safe choice, since the raw item was never redacted.
	var kept []*Entry
	undeliverable := map[int]bool{}
	for i := range in.Entries {
		e := &in.Entries[i]
		if e.Reason != h4r.ReasonKept {
			continue
		}
		if e.Delivered == nil {
			warnings = append(warnings, "item "+e.Ranked.Candidate.Item.ID+" was kept without a delivered form and was left out")
			undeliverable[i] = true
			continue
		}
		kept = append(kept, e)
	}

	n := b.tldrSentences
	if in.TLDRSentences != nil {
		n = max(*in.TLDRSentences, 0)
	}
	tldr := summarize(in.Query, kept, n, b.marker)
	affordances := affordance.SuggestWith(b.rules, in.Query, evidence(kept, b.marker), b.stems)
	includeGraph := b.includeGraph
	if in.IncludeGraph != nil {
		includeGraph = *in.IncludeGraph
	}
	var graph *h4r.CausalGraph
	if includeGraph {
		graph = causalGraph(kept)
	}

	p := &h4r.Pack{
		RequestID:  in.RequestID,
		Status:     in.Status,
		Results:    results(kept, in.IncludeScores),
		TotalCount: len(in.Entries),
		Sources:    sources(in),
		AgentSlice: agentSlice(in.Specialist, tldr.Text, kept, affordances),
		Explainability: h4r.Explainability{
			TLDR:        tldr,
			Affordances: affordances,
			CausalGraph: graph,
			Slicing:     in.Slicing,
			Weights:     in.Weights,
			Warnings:    warnings,
			Items:       itemExplanations(in.Entries, undeliverable, in.Audit, in.ExplainAll),
		},
	}
	if p.Status == "" {
		p.Status = h4r.StatusOK
	}
	if p.Sources == nil {
		p.Sources = map[string]h4r.SourceStats{}
	}
	p.SourceNames = append([]string{}, slices.Sorted(maps.Keys(p.Sources))...) // [] when none
	p.Explainability.TLDR.Summary = p.Explainability.TLDR.Text

	ended := b.now()
	t := in.Timings
	if t.RetrievalMs == 0 {
		t.RetrievalMs = t.CandidateMs + t.RankingMs
	}
	t.SummarizationMs = ms(ended.Sub(began))
	if in.Start.IsZero() {
		t.TotalMs = t.RetrievalMs + t.SlicingMs + t.SummarizationMs
	} else {
		t.TotalMs = ms(ended.Sub(in.Start))
	}
	p.Explainability.Timings = t
	p.QueryDurationMs = t.TotalMs
	return p
}

// orEmpty is content, or {} for an item without any, so that a result's
// content is always an object (the context-pack contract's response example).
func orEmpty(content map[string]any) map[string]any {
	if content == nil {
		return map[string]any{}
	}
	return content
}

// results turns kept entries into results, in rank order.
func results(kept []*Entry, includeScores bool) []h4r.Result {
	out := make([]h4r.Result, 0, len(kept))
	// A result cites the results it supersedes: only those, so that it
	// names no item the caller may not see.
	supersedes := map[string][]string{}
	for _, e := range kept {
		if c := e.Ranked.Candidate; c.SupersededBy != "" {
			supersedes[c.SupersededBy] = append(supersedes[c.SupersededBy], c.Item.ID)
		}
	}
	for _, e := range kept {
		r := e.Ranked
		m := r.Candidate.Item.Metadata
		res := h4r.Result{
			ID:          e.Delivered.ID,
			Kind:        e.Delivered.Kind,
			Text:        e.Delivered.Text,
			Content:     orEmpty(e.Delivered.Content),
			Score:       r.Score,
			Reason:      h4r.ReasonKept,
			Explanation: r.Explain(),
			Metadata: h4r.ResultMetadata{
				Source:         rank.SourceLabel(r.Candidate),
				Redacted:       e.Redacted,
				RedactedFields: e.RedactedFields,
				ByteSize:       e.Bytes,
				Tokens:         e.Tokens,
				Version:        m.Version,
			},
			Citation:             h4r.CitationOf(m, r.Score),
			SupersededBy:         r.Candidate.SupersededBy,
			SupersessionProposed: r.Candidate.SupersessionProposed,
			Supersedes:           supersedes[e.Delivered.ID],
		}
		if !m.CreatedAt.IsZero() {
			res.Metadata.CreatedAt = m.CreatedAt.UTC().Format(time.RFC3339)
		}
		if includeScores {
			signals := r.Signals
			res.Signals = &signals
		}
		out = append(out, res)
	}
	return out
}

// itemExplanations gives the verdict on every ranked candidate, kept or not,
// to a caller that may audit; to any other, only on the entries policy let
// through, ranked among themselves, so that neither an id nor a gap in the
// ranks tells of an item it may not see. An entry kept without a delivered
// form (left out of the results) is reported as a policy drop: its
// decision could not be carried out. Without all, only the kept entries
// are listed, with the ranks they have in the full list.
func itemExplanations(entries []Entry, undeliverable map[int]bool, audit, all bool) []h4r.ItemExplanation {
	out := make([]h4r.ItemExplanation, 0, len(entries))
	rank := 0
	for i, e := range entries {
		if undeliverable[i] {
			e.Reason, e.Detail = h4r.ReasonPolicy, "kept without a delivered form"
		}
		if !audit && !passedPolicy(e.Reason) {
			continue
		}
		rank++
		if !all && e.Reason != h4r.ReasonKept {
			continue
		}
		out = append(out, h4r.ItemExplanation{
			ID:          e.Ranked.Candidate.Item.ID,
			Rank:        rank,
			Score:       e.Ranked.Score,
			Signals:     e.Ranked.Signals,
			Reason:      e.Reason,
			Detail:      e.Detail,
			Redacted:    e.Redacted,
			Explanation: e.Ranked.Explain(),

			SupersededBy:         e.Ranked.Candidate.SupersededBy,
			SupersessionProposed: e.Ranked.Candidate.SupersessionProposed,
		})
	}
	return out
}

// passedPolicy reports whether an entry's reason says the policy allowed
// it: kept, or left out by a budget. Entries under min_score never reached
// the policy, so they may be items the caller must not learn of.
func passedPolicy(reason string) bool {
	switch reason {
	case h4r.ReasonKept, h4r.ReasonBudgetBytes, h4r.ReasonBudgetTokens, h4r.ReasonBudgetItems:
		return true
	}
	return false
}

// sources is the per-generator statistics. For a caller that may not
// audit, each generator counts only the candidates it found that passed
// the policy: a generator's count of hidden items would tell which one
// found them (the graph: a hidden item links to a visible one).
func sources(in Input) map[string]h4r.SourceStats {
	if in.Audit || in.Sources == nil {
		return in.Sources
	}
	out := make(map[string]h4r.SourceStats, len(in.Sources))
	for name, st := range in.Sources {
		st.Candidates = 0
		out[name] = st
	}
	for _, e := range in.Entries {
		if !passedPolicy(e.Reason) || (e.Reason == h4r.ReasonKept && e.Delivered == nil) {
			continue
		}
		counted := map[string]bool{}
		for _, ev := range e.Ranked.Candidate.Evidence {
			if st, ok := out[ev.Generator]; ok && !counted[ev.Generator] {
				counted[ev.Generator] = true
				st.Candidates++
				out[ev.Generator] = st
			}
		}
	}
	return out
}

// evidence is what affordance rules see of kept entries: the delivered
// text and content, without the redacted values, so nothing redacted can
// trigger a rule or become one of its parameters.
func evidence(kept []*Entry, marker string) []affordance.Evidence {
	out := make([]affordance.Evidence, 0, len(kept))
	for _, e := range kept {
		m := e.Ranked.Candidate.Item.Metadata
		out = append(out, affordance.Evidence{
			ID:        e.Delivered.ID,
			Kind:      e.Delivered.Kind,
			Text:      e.Delivered.Text,
			Content:   withoutRedacted(e.Delivered.Content, marker),
			Tags:      m.Tags,
			Metadata:  m.Extra,
			Score:     e.Ranked.Score,
			Relevance: e.Ranked.Signals[h4r.Relevance],
		})
	}
	return out
}

// withoutRedacted returns content without the top-level values that are
// or hold the redaction marker, which affordance parameters are read from.
// It copies only when there is something to leave out.
func withoutRedacted(content map[string]any, marker string) map[string]any {
	var out map[string]any
	for k, v := range content {
		if !holds(v, marker) {
			continue
		}
		if out == nil {
			out = maps.Clone(content)
		}
		delete(out, k)
	}
	if out == nil {
		return content
	}
	return out
}

// holds reports whether v is, or contains somewhere, a string holding
// marker.
func holds(v any, marker string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, marker)
	case []any:
		return slices.ContainsFunc(x, func(e any) bool { return holds(e, marker) })
	case map[string]any:
		for _, e := range x {
			if holds(e, marker) {
				return true
			}
		}
	}
	return false
}

// causalGraph links the kept items: an edge appears only when both its ends
// were delivered.
func causalGraph(kept []*Entry) *h4r.CausalGraph {
	g := &h4r.CausalGraph{Nodes: make([]h4r.GraphNode, 0, len(kept)), Edges: []h4r.GraphEdge{}}
	delivered := make(map[string]bool, len(kept))
	for _, e := range kept {
		delivered[e.Delivered.ID] = true
		g.Nodes = append(g.Nodes, h4r.GraphNode{ID: e.Delivered.ID, Kind: e.Delivered.Kind})
	}
	for _, e := range kept {
		for _, l := range e.Ranked.Candidate.Item.Links {
			if delivered[l.Target] {
				g.Edges = append(g.Edges, h4r.GraphEdge{Source: e.Delivered.ID, Target: l.Target, Type: l.Type, Strength: l.Strength})
			}
		}
	}
	return g
}

// agentSlice is the minimal context for the specialist: the TL;DR, the
// delivered ids and the suggested actions.
func agentSlice(spec h4r.Specialist, summary string, kept []*Entry, affordances []h4r.Affordance) h4r.AgentSlice {
	s := h4r.AgentSlice{
		SpecialistID:  spec.ID,
		SecurityLevel: spec.SecurityLevel.String(),
		Summary:       summary,
		ItemIDs:       make([]string, 0, len(kept)),
		Actions:       make([]string, 0, len(affordances)),
	}
	for _, e := range kept {
		s.ItemIDs = append(s.ItemIDs, e.Delivered.ID)
	}
	for _, a := range affordances {
		s.Actions = append(s.Actions, a.Type)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
