package h4r

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/h4r/h4r/internal/jsonappend"
)

// AppendJSON appends p as JSON, byte for byte as json.Marshal writes it,
// without reflection: the server writes every context pack, and
// encoding/json spent most of its time there walking the types and
// compacting what the signals' MarshalJSON returned
// (bench/results/2026-12-01/pack-cpu-6.md). Values
// of the free-form maps (a result's content, an affordance's parameters)
// of a type JSON decoding does not produce still go through
// encoding/json. TestPackAppendJSON and FuzzPackAppendJSON
// hold the two writers to the same bytes; a field added to a pack's types
// must be added here too, and those tests fail until it is.
func (p *Pack) AppendJSON(dst []byte) ([]byte, error) {
	w := jsonWriter{b: dst}
	w.pack(p)
	if w.err != nil {
		return dst, fmt.Errorf("encoding a pack: %w", w.err)
	}
	return w.b, nil
}

// jsonWriter appends JSON to b, keeping the first error (a number with no
// JSON form, a map encoding/json refused).
type jsonWriter struct {
	b   []byte
	err error
}

func (w *jsonWriter) key(name string, n *int) { w.b = jsonappend.Key(w.b, name, n) }
func (w *jsonWriter) str(s string)            { w.b = jsonappend.String(w.b, s) }
func (w *jsonWriter) int(n int)               { w.b = jsonappend.Int(w.b, n) }
func (w *jsonWriter) bool(v bool)             { w.b = jsonappend.Bool(w.b, v) }
func (w *jsonWriter) strs(list []string)      { w.b = jsonappend.Strings(w.b, list) }

// fail keeps err unless an earlier error was kept.
func (w *jsonWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *jsonWriter) float(f float64) {
	var err error
	if w.b, err = jsonappend.Float(w.b, f); err != nil {
		w.fail(err)
	}
}

// list writes a slice as encoding/json does (null when nil), each element
// with each.
func list[E any](w *jsonWriter, items []E, each func(*E)) {
	if items == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = append(w.b, '[')
	for i := range items {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		each(&items[i])
	}
	w.b = append(w.b, ']')
}

// any writes a free-form value: the types a decoded item's content holds
// directly, anything else through encoding/json.
func (w *jsonWriter) any(v any) {
	switch x := v.(type) {
	case nil:
		w.b = append(w.b, "null"...)
	case string:
		w.str(x)
	case bool:
		w.bool(x)
	case float64:
		w.float(x)
	case int:
		w.int(x)
	case []any:
		list(w, x, func(e *any) { w.any(*e) })
	case map[string]any:
		w.object(x)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			w.fail(err)
			return
		}
		w.b = append(w.b, b...)
	}
}

// object writes a free-form map.
func (w *jsonWriter) object(m map[string]any) { sortedMap(w, m, (*jsonWriter).any) }

// sortedMap writes a map as encoding/json does: null when nil, its keys
// sorted, each value with each.
func sortedMap[V any](w *jsonWriter, m map[string]V, each func(*jsonWriter, V)) {
	if m == nil {
		w.b = append(w.b, "null"...)
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w.b = append(w.b, '{')
	for i, k := range keys {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(k)
		w.b = append(w.b, ':')
		each(w, m[k])
	}
	w.b = append(w.b, '}')
}

// vector writes signals or weights as their MarshalJSON does.
func (w *jsonWriter) vector(v [NumSignals]float64) {
	b, err := appendVector(w.b, v)
	if err != nil {
		w.fail(err)
		return
	}
	w.b = b
}

func (w *jsonWriter) pack(p *Pack) {
	n := 0
	w.b = append(w.b, '{')
	if p.RequestID != "" {
		w.key("request_id", &n)
		w.str(p.RequestID)
	}
	w.key("status", &n)
	w.str(p.Status)
	w.key("results", &n)
	list(w, p.Results, w.result)
	w.key("total_count", &n)
	w.int(p.TotalCount)
	w.key("query_duration_ms", &n)
	w.float(p.QueryDurationMs)
	w.key("sources", &n)
	w.strs(p.SourceNames)
	w.key("sourceStats", &n)
	w.sourceStats(p.Sources)
	w.key("agentSlice", &n)
	w.agentSlice(&p.AgentSlice)
	w.key("explainability", &n)
	w.explainability(&p.Explainability)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) result(r *Result) {
	n := 0
	w.b = append(w.b, '{')
	w.key("id", &n)
	w.str(r.ID)
	if r.Kind != "" {
		w.key("kind", &n)
		w.str(r.Kind)
	}
	w.key("text", &n)
	w.str(r.Text)
	w.key("content", &n)
	w.object(r.Content)
	w.key("score", &n)
	w.float(r.Score)
	if r.Signals != nil {
		w.key("signals", &n)
		w.vector(*r.Signals)
	}
	w.key("reason", &n)
	w.str(r.Reason)
	w.key("explanation", &n)
	w.str(r.Explanation)
	w.key("metadata", &n)
	w.resultMetadata(&r.Metadata)
	if r.SupersededBy != "" {
		w.key("superseded_by", &n)
		w.str(r.SupersededBy)
	}
	if r.SupersessionProposed {
		w.key("supersession_proposed", &n)
		w.bool(true)
	}
	if len(r.Supersedes) > 0 {
		w.key("supersedes", &n)
		w.strs(r.Supersedes)
	}
	if r.Citation != nil {
		w.key("citation", &n)
		w.citation(r.Citation)
	}
	w.b = append(w.b, '}')
}

func (w *jsonWriter) resultMetadata(m *ResultMetadata) {
	n := 0
	w.b = append(w.b, '{')
	w.key("source", &n)
	w.str(m.Source)
	if m.CreatedAt != "" {
		w.key("createdAt", &n)
		w.str(m.CreatedAt)
	}
	w.key("redacted", &n)
	w.bool(m.Redacted)
	if len(m.RedactedFields) > 0 {
		w.key("redactedFields", &n)
		w.strs(m.RedactedFields)
	}
	w.key("byteSize", &n)
	w.int(m.ByteSize)
	w.key("tokens", &n)
	w.int(m.Tokens)
	if m.Version != 0 {
		w.key("version", &n)
		w.int(m.Version)
	}
	w.b = append(w.b, '}')
}

func (w *jsonWriter) citation(c *Citation) {
	n := 0
	w.b = append(w.b, '{')
	for _, f := range [...]struct{ name, v string }{{"path", c.Path}, {"url", c.URL}, {"sha", c.SHA}, {"source_type", c.SourceType}} {
		if f.v != "" {
			w.key(f.name, &n)
			w.str(f.v)
		}
	}
	if len(c.LineRange) > 0 {
		w.key("line_range", &n)
		list(w, c.LineRange, func(v *int) { w.int(*v) })
	}
	w.key("score", &n)
	w.float(c.Score)
	w.b = append(w.b, '}')
}

// sourceStats writes each generator's counts, by name.
func (w *jsonWriter) sourceStats(m map[string]SourceStats) {
	sortedMap(w, m, func(w *jsonWriter, st SourceStats) {
		n := 0
		w.b = append(w.b, '{')
		w.key("candidates", &n)
		w.int(st.Candidates)
		w.key("ms", &n)
		w.float(st.Ms)
		if st.Error != "" {
			w.key("error", &n)
			w.str(st.Error)
		}
		w.b = append(w.b, '}')
	})
}

func (w *jsonWriter) agentSlice(a *AgentSlice) {
	n := 0
	w.b = append(w.b, '{')
	w.key("specialistId", &n)
	w.str(a.SpecialistID)
	w.key("securityLevel", &n)
	w.str(a.SecurityLevel)
	w.key("summary", &n)
	w.str(a.Summary)
	w.key("itemIds", &n)
	w.strs(a.ItemIDs)
	w.key("actions", &n)
	w.strs(a.Actions)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) explainability(e *Explainability) {
	n := 0
	w.b = append(w.b, '{')
	w.key("tldr", &n)
	w.tldr(&e.TLDR)
	w.key("affordances", &n)
	list(w, e.Affordances, w.affordance)
	w.key("causalGraph", &n)
	w.causalGraph(e.CausalGraph)
	w.key("slicing", &n)
	w.slicing(&e.Slicing)
	w.key("timings", &n)
	w.timings(&e.Timings)
	w.key("weights", &n)
	w.vector(e.Weights)
	w.key("warnings", &n)
	w.strs(e.Warnings)
	w.key("items", &n)
	list(w, e.Items, w.itemExplanation)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) tldr(t *TLDR) {
	n := 0
	w.b = append(w.b, '{')
	w.key("summary", &n)
	w.str(t.Summary)
	w.key("text", &n)
	w.str(t.Text)
	w.key("sentences", &n)
	list(w, t.Sentences, func(s *Sentence) {
		m := 0
		w.b = append(w.b, '{')
		w.key("text", &m)
		w.str(s.Text)
		w.key("itemId", &m)
		w.str(s.ItemID)
		w.key("score", &m)
		w.float(s.Score)
		w.b = append(w.b, '}')
	})
	w.key("citations", &n)
	w.strs(t.Citations)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) affordance(a *Affordance) {
	n := 0
	w.b = append(w.b, '{')
	w.key("type", &n)
	w.str(a.Type)
	w.key("description", &n)
	w.str(a.Description)
	w.key("confidence", &n)
	w.float(a.Confidence)
	if len(a.Parameters) > 0 {
		w.key("parameters", &n)
		w.object(a.Parameters)
	}
	if len(a.Evidence) > 0 {
		w.key("evidence", &n)
		w.strs(a.Evidence)
	}
	w.b = append(w.b, '}')
}

func (w *jsonWriter) causalGraph(g *CausalGraph) {
	if g == nil {
		w.b = append(w.b, "null"...)
		return
	}
	n := 0
	w.b = append(w.b, '{')
	w.key("nodes", &n)
	list(w, g.Nodes, func(node *GraphNode) {
		m := 0
		w.b = append(w.b, '{')
		w.key("id", &m)
		w.str(node.ID)
		if node.Kind != "" {
			w.key("kind", &m)
			w.str(node.Kind)
		}
		w.b = append(w.b, '}')
	})
	w.key("edges", &n)
	list(w, g.Edges, func(e *GraphEdge) {
		m := 0
		w.b = append(w.b, '{')
		w.key("source", &m)
		w.str(e.Source)
		w.key("target", &m)
		w.str(e.Target)
		w.key("type", &m)
		w.str(e.Type)
		w.key("strength", &m)
		w.float(e.Strength)
		w.b = append(w.b, '}')
	})
	w.b = append(w.b, '}')
}

func (w *jsonWriter) slicing(s *SlicingStats) {
	n := 0
	w.b = append(w.b, '{')
	for _, f := range [...]struct {
		name string
		v    int
	}{
		{"totalCandidates", s.TotalCandidates}, {"totalKept", s.TotalKept}, {"totalRedacted", s.TotalRedacted},
		{"totalDroppedBudget", s.TotalDroppedBudget}, {"totalDroppedPolicy", s.TotalDroppedPolicy}, {"totalDroppedScore", s.TotalDroppedScore},
	} {
		w.key(f.name, &n)
		w.int(f.v)
	}
	w.key("budgetUsed", &n)
	w.budget(s.BudgetUsed)
	w.key("budgetLimit", &n)
	w.budget(s.BudgetLimit)
	if s.PolicyRevision != "" {
		w.key("policyRevision", &n)
		w.str(s.PolicyRevision)
	}
	w.key("fallbackUsed", &n)
	w.bool(s.FallbackUsed)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) budget(u BudgetUsage) {
	n := 0
	w.b = append(w.b, '{')
	w.key("bytes", &n)
	w.int(u.Bytes)
	w.key("estimatedTokens", &n)
	w.int(u.EstimatedTokens)
	w.key("items", &n)
	w.int(u.Items)
	w.b = append(w.b, '}')
}

func (w *jsonWriter) timings(t *Timings) {
	n := 0
	w.b = append(w.b, '{')
	for _, f := range [...]struct {
		name string
		v    float64
	}{
		{"candidateMs", t.CandidateMs}, {"rankingMs", t.RankingMs}, {"retrievalMs", t.RetrievalMs},
		{"slicingMs", t.SlicingMs}, {"summarizationMs", t.SummarizationMs}, {"totalMs", t.TotalMs},
	} {
		w.key(f.name, &n)
		w.float(f.v)
	}
	w.b = append(w.b, '}')
}

func (w *jsonWriter) itemExplanation(e *ItemExplanation) {
	n := 0
	w.b = append(w.b, '{')
	w.key("id", &n)
	w.str(e.ID)
	w.key("rank", &n)
	w.int(e.Rank)
	w.key("score", &n)
	w.float(e.Score)
	w.key("signals", &n)
	w.vector(e.Signals)
	w.key("reason", &n)
	w.str(e.Reason)
	if e.Detail != "" {
		w.key("detail", &n)
		w.str(e.Detail)
	}
	if e.Redacted {
		w.key("redacted", &n)
		w.bool(true)
	}
	w.key("explanation", &n)
	w.str(e.Explanation)
	if e.SupersededBy != "" {
		w.key("superseded_by", &n)
		w.str(e.SupersededBy)
	}
	if e.SupersessionProposed {
		w.key("supersession_proposed", &n)
		w.bool(true)
	}
	w.b = append(w.b, '}')
}
