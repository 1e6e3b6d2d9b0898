package affordance

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kljensen/snowball/english"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/words"
)

// Evidence is one delivered item as the rules see it.
type Evidence struct {
	ID, Kind, Text string
	Content        map[string]any
	Tags           []string
	// Metadata holds the item's extra flat metadata keys (status,
	// test_type, …).
	Metadata         map[string]any
	Score, Relevance float64
}

// Suggest applies the rules to the evidence and returns the affordances
// that fire, most confident first (then by type). Each names the ids of the
// items that triggered it. The result is never nil. Relevance is the
// evidence's own (SuggestFor judges it from the query's words).
func Suggest(rules []Rule, evidence []Evidence) []h4r.Affordance {
	return SuggestFor(rules, "", evidence)
}

// SuggestFor is Suggest for the query whose evidence this is. When the
// query has words, relevance is judged on what a reader would accept: the
// share of the query's words (stemmed, stop words left out) that an item's
// text or content values hold as whole words, not a fused or normalised ranking score, which
// makes the best of poor candidates look relevant. An item that shares no
// word with the query triggers no rule of its own, so that a query matching
// nothing (found by character n-grams, say) is answered with
// request_more_context rather than with the keywords of whatever came back.
func SuggestFor(rules []Rule, query string, evidence []Evidence) []h4r.Affordance {
	return SuggestWith(rules, query, evidence, nil)
}

// SuggestWith is SuggestFor with stems remembered across calls in known
// (nil: within this call only): the same words come back pack after pack,
// and stemming them again was most of the pack builder's CPU time.
func SuggestWith(rules []Rule, query string, evidence []Evidence, known *Stems) []h4r.Affordance {
	out := []h4r.Affordance{}
	// Tokenise each text once: every keyword rule reads it.
	textWords := make([][]string, len(evidence))
	for i, e := range evidence {
		textWords[i] = words.Lower(e.Text)
	}
	terms := queryTerms(query)
	if len(terms) > 0 {
		judged := make([]Evidence, 0, len(evidence))
		judgedWords := make([][]string, 0, len(evidence))
		// Stem each distinct word once: the items of one pack share most of
		// their words, and stemming every word of every item was the pack
		// builder's largest CPU cost under load.
		stem := stemmer{memo: map[string]string{}, known: known}
		for i, e := range evidence {
			e.Relevance = overlap(stem, terms, append(contentWords(e.Content), textWords[i]...))
			judged = append(judged, e)
			judgedWords = append(judgedWords, textWords[i])
		}
		known.add(stem.memo)
		evidence, textWords = judged, judgedWords
	}
	for _, r := range rules {
		if a, ok := apply(r, evidence, textWords, len(terms) > 0); ok {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b h4r.Affordance) int {
		return cmp.Or(cmp.Compare(b.Confidence, a.Confidence), strings.Compare(a.Type, b.Type))
	})
	return out
}

// apply evaluates one rule.
func apply(r Rule, evidence []Evidence, textWords [][]string, byQuery bool) (h4r.Affordance, bool) {
	a := h4r.Affordance{Type: r.Type, Description: r.Description}
	if r.WhenBestRelevanceBelow > 0 {
		best := 0.0
		for _, e := range evidence {
			best = max(best, e.Relevance)
		}
		if len(evidence) > 0 && best >= r.WhenBestRelevanceBelow {
			return a, false
		}
		a.Confidence = r.Confidence.of(0)
		a.Parameters = map[string]any{"bestRelevance": round(best), "threshold": r.WhenBestRelevanceBelow}
		return a, true
	}

	keywords := make([][]string, len(r.Match.Keywords))
	for i, kw := range r.Match.Keywords {
		keywords[i] = words.Lower(kw)
	}
	var matched []int
	for i, e := range evidence {
		if byQuery && e.Relevance == 0 {
			continue // shares no word with the query
		}
		if r.Match.matches(e, textWords[i], keywords) {
			matched = append(matched, i)
		}
	}
	if len(matched) == 0 || len(matched) < r.MinMatches {
		return a, false
	}
	a.Confidence = r.Confidence.of(len(matched))
	for _, i := range matched {
		a.Evidence = append(a.Evidence, evidence[i].ID)
	}
	for _, p := range r.Params {
		values := collect(p.ContentKey, evidence, matched)
		if len(values) == 0 {
			continue
		}
		if a.Parameters == nil {
			a.Parameters = map[string]any{}
		}
		if prev, ok := a.Parameters[p.Name].([]string); ok {
			values = appendDistinct(prev, values...)
		}
		a.Parameters[p.Name] = values
	}
	return a, true
}

// of returns the confidence for n matching items, in [0, 1].
func (c Confidence) of(n int) float64 {
	capAt := c.Max
	if capAt <= 0 || capAt > 1 {
		capAt = 1
	}
	return round(min(c.Base+c.PerMatch*float64(n), capAt))
}

// round keeps six decimals, so that 0.5 + 0.1×3 reads 0.8 and not
// 0.8000000000000002.
func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// matches reports whether any criterion of m matches e. keywords are m's
// keywords, already split into words.
func (m Match) matches(e Evidence, textWords []string, keywords [][]string) bool {
	if slices.Contains(m.Kinds, e.Kind) {
		return true
	}
	for _, t := range m.Tags {
		if slices.ContainsFunc(e.Tags, func(tag string) bool { return strings.EqualFold(tag, t) }) {
			return true
		}
	}
	for _, kw := range keywords {
		if containsPhrase(textWords, kw) {
			return true
		}
	}
	for key, want := range m.MetadataEquals {
		if v, ok := e.Metadata[key]; ok && strings.EqualFold(text(v), want) {
			return true
		}
	}
	return false
}

// contentWords are the words of content's values, top-level scalars and
// the scalars of lists (what rule parameters are read from): a reader
// sees them beside the text.
func contentWords(content map[string]any) []string {
	var out []string
	for _, v := range content {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				out = append(out, words.Lower(text(e))...)
			}
		case []string:
			for _, e := range x {
				out = append(out, words.Lower(e)...)
			}
		default:
			out = append(out, words.Lower(text(x))...)
		}
	}
	return out
}

// stopWords are left out of a query's terms: they say nothing of its topic.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the a an and or but in on at to for of with by from as is was be been are were
		how what why when which who whom this that these those it its into about do does did can could should would will
		not no any some all via using use my our your their we you they me us them there here than then so if`) {
		stopWords[w] = true
	}
}

// queryTerms are the distinct stems of the query's words, stop words and
// single characters left out.
func queryTerms(query string) []string {
	var out []string
	for _, w := range words.Lower(query) {
		if len(w) < 2 || stopWords[w] {
			continue
		}
		if s := english.Stem(w, false); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// overlap is the share of terms that text (its words) holds, stemmed
// alike. A stem of four letters or more also matches the stems it begins,
// or that begin it: the stemmer leaves "failures" as failur and "failed" as
// fail, which a reader takes for one word.
func overlap(stem stemmer, terms, text []string) float64 {
	// The query has a few terms and an item some dozens of words: each
	// word's stem is compared with every term not yet found, which spares
	// a set of the item's stems per item.
	var foundSmall [16]bool
	var found []bool
	if len(terms) > len(foundSmall) {
		found = make([]bool, len(terms))
	} else {
		found = foundSmall[:len(terms)]
	}
	// A word's stem begins with the word's first letter (the stemmer
	// changes endings only), and a stem matches a term only when both
	// begin alike: a word no term begins as is not stemmed at all, which
	// spares most of the stem lookups.
	var firsts [256]bool
	for _, t := range terms {
		firsts[t[0]] = true
	}
	n := 0
	for _, w := range text {
		if !firsts[w[0]] {
			continue
		}
		s := stem.of(w)
		for i, t := range terms {
			if !found[i] && (s == t || len(t) >= 4 && len(s) >= 4 && (strings.HasPrefix(s, t) || strings.HasPrefix(t, s))) {
				found[i] = true
				n++
			}
		}
		if n == len(terms) {
			break
		}
	}
	return float64(n) / float64(len(terms))
}

// stemmer memoises english.Stem for the words of one call, reading the
// stems remembered across calls (known, if any) before stemming.
type stemmer struct {
	memo  map[string]string
	known *Stems
}

func (m stemmer) of(w string) string {
	s, ok := m.memo[w]
	if !ok {
		if s, ok = m.known.get(w); !ok {
			s = english.Stem(w, false)
		}
		m.memo[w] = s
	}
	return s
}

// Stems remembers the stems of up to a fixed number of words across
// calls of SuggestWith. A word's stem never changes, so a remembered one
// is always right; past the bound it forgets them all and starts again.
// It is safe for concurrent use.
type Stems struct {
	mu    sync.RWMutex
	stems map[string]string
	limit int
}

// NewStems returns a memory of up to limit stems.
func NewStems(limit int) *Stems {
	return &Stems{stems: map[string]string{}, limit: max(limit, 1)}
}

// get returns the stem remembered for w, if any; a nil Stems remembers
// nothing.
func (k *Stems) get(w string) (string, bool) {
	if k == nil {
		return "", false
	}
	k.mu.RLock()
	s, ok := k.stems[w]
	k.mu.RUnlock()
	return s, ok
}

// add remembers the stems of one call, under one lock.
func (k *Stems) add(stems map[string]string) {
	if k == nil || len(stems) == 0 {
		return
	}
	k.mu.RLock()
	fresh := 0
	for w := range stems {
		if _, ok := k.stems[w]; !ok {
			fresh++
		}
	}
	k.mu.RUnlock()
	if fresh == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.stems)+fresh > k.limit {
		clear(k.stems)
	}
	for w, s := range stems {
		if len(k.stems) >= k.limit {
			return
		}
		if _, ok := k.stems[w]; !ok {
			// Clones: a word may be a slice of a long text, which the
			// memory would otherwise keep.
			k.stems[strings.Clone(w)] = strings.Clone(s)
		}
	}
}

// containsPhrase reports whether phrase occurs as consecutive words of
// text.
func containsPhrase(text, phrase []string) bool {
	if len(phrase) == 0 {
		return false
	}
	for i := 0; i+len(phrase) <= len(text); i++ {
		if slices.Equal(text[i:i+len(phrase)], phrase) {
			return true
		}
	}
	return false
}

// collect returns the distinct values of content[key] of the matched
// items, in evidence order. A list contributes each element; empty values
// are skipped. Redacted values are the caller's to leave out: Suggest does
// not know the slicer's redaction marker.
func collect(key string, evidence []Evidence, matched []int) []string {
	var out []string
	for _, i := range matched {
		switch v := evidence[i].Content[key].(type) {
		case []any:
			for _, x := range v {
				out = appendDistinct(out, text(x))
			}
		case []string:
			out = appendDistinct(out, v...)
		case nil:
		default:
			out = appendDistinct(out, text(v))
		}
	}
	return out
}

func appendDistinct(list []string, values ...string) []string {
	for _, v := range values {
		if v == "" || slices.Contains(list, v) {
			continue
		}
		list = append(list, v)
	}
	return list
}

// text is a scalar JSON value as text; maps and lists give "".
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	}
	return ""
}
