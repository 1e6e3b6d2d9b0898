package analysis

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Expansion are the parameters of pseudo-relevance feedback: the first
// pass's top Docs hits are taken as relevant, the Terms words most likely
// under their relevance model are added to the query, and the original
// query keeps the share OriginalWeight of the expanded query's weight.
type Expansion struct {
	Docs           int     // feedback documents (k); fewer first-pass hits: no expansion
	Terms          int     // expansion words kept
	OriginalWeight float64 // λ in [0,1]: 1 leaves the query as it was
	// FirstPass is the first pass's share of a hit's final score: each
	// pass's scores are divided by its best, and a hit scores
	// FirstPass·first + (1−FirstPass)·second (0 where a pass missed it).
	// 0 is plain RM3, the second pass alone.
	FirstPass float64
	// Spread, when positive, leaves a query unexpanded when its best
	// first-pass score is at least Spread times its Docs-th: one hit stands
	// out, and the words of the documents below it would push it down
	// (selective expansion by the spread of the first pass's scores).
	Spread float64
	// Contrast scores each word by its share of the divergence of the
	// feedback documents' model from the model of every first-pass hit
	// (Carpineto et al.'s KL term selection, with the result list as the
	// background), instead of by its probability alone.
	Contrast bool
}

// Skip reports whether a first pass whose scores, best first, are scores
// stands out enough (Spread) to be left unexpanded.
func (e Expansion) Skip(scores []float64) bool {
	if e.Spread <= 0 || len(scores) < e.Docs || e.Docs < 1 {
		return false
	}
	kth := scores[e.Docs-1]
	return kth <= 0 || scores[0] >= e.Spread*kth
}

// DefaultExpansion are the parameters a request that asks for expansion
// gets unless configured (H4R_EXPANSION_*): the ones k-fold
// cross-validation over the public collections chose (h4r bench
// expansion; bench/RESULTS.md has the held-out figures).
func DefaultExpansion() Expansion {
	return Expansion{Docs: 5, Terms: 10, OriginalWeight: 0.7}
}

// Valid reports whether the parameters can expand a query.
func (e Expansion) Valid() bool {
	return e.Docs > 0 && e.Terms > 0 && e.OriginalWeight >= 0 && e.OriginalWeight < 1 && e.FirstPass >= 0 && e.FirstPass < 1 && e.Spread >= 0
}

// Fuse returns the score of each id under the two passes (scores higher is
// better), as FirstPass says: each pass's scores divided by its best, a
// missing score 0. A pass whose best is not positive counts 0.
func (e Expansion) Fuse(first, second map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(first)+len(second))
	add := func(scores map[string]float64, share float64) {
		best := 0.0
		for _, v := range scores {
			best = max(best, v)
		}
		for id, v := range scores {
			if best > 0 && !math.IsInf(best, 1) {
				out[id] += share * v / best
			} else {
				out[id] += 0 // present, with no score from this pass
			}
		}
	}
	add(first, e.FirstPass)
	add(second, 1-e.FirstPass)
	return out
}

// FeedbackDoc is one first-pass hit: its indexed text and its score
// (higher is better; a BM25 score).
type FeedbackDoc struct {
	Text  string
	Score float64
}

// maxExpansionWordLen: longer runs are identifiers, hashes and URLs, not
// words a relevance model should add.
const maxExpansionWordLen = 20

// Expand is RM3 (Abdul-Jaleel et al., 2004, as Anserini implements it):
// the relevance model P(w|R) = Σ_d P(w|d)·P(d|q) over the feedback
// documents, with P(w|d) the word's share of d's words (stop words left
// out) and P(d|q) the document's first-pass score over the sum of the
// scores; its Terms most likely words, renormalised, are interpolated with
// the original query's words (each qtf/|q|): λ·P(w|q) + (1-λ)·P(w|R).
//
// The stores take integer query-term counts (qtf), so the interpolated
// weights are written as counts sharing MaxOccurrences (largest
// remainders), every original word keeping at least one: multiplying
// every qtf by one constant leaves a BM25 ranking unchanged, so the counts
// carry the weights up to rounding. Expansion words that round to no count
// are dropped, and no more than MaxTerms distinct words are kept, the
// original ones first.
//
// key groups the words that one index term stands for (the stores' stem);
// nil keeps words as they are. A group is written as its most frequent
// word. Expand returns the query's own terms when there are fewer than
// Docs documents or the parameters are not Valid, so a caller can tell
// (Changed) that no second pass is needed.
func (a *Analyzer) Expand(query string, docs, background []FeedbackDoc, p Expansion, key func(string) string) []Term {
	orig := a.Terms(query)
	if !p.Valid() || len(docs) == 0 || len(orig) == 0 {
		return orig
	}
	if key == nil {
		key = func(w string) string { return w }
	}
	docs = docs[:min(len(docs), p.Docs)]
	// A score that is not a positive finite number gives its document no
	// weight of its own.
	weight := func(d FeedbackDoc) float64 {
		if d.Score > 0 && !math.IsInf(d.Score, 1) {
			return d.Score
		}
		return 0
	}
	var scoreSum float64
	for _, d := range docs {
		scoreSum += weight(d)
	}
	var stop map[string]bool
	if a != nil {
		stop = a.stop
	}
	type group struct {
		p     float64        // P(w|R), unnormalised
		forms map[string]int // surface forms and their counts
	}
	groups := map[string]*group{}
	for _, d := range docs {
		var pd float64 // P(d|q)
		if scoreSum > 0 && !math.IsInf(scoreSum, 1) {
			pd = weight(d) / scoreSum
		} else {
			pd = 1 / float64(len(docs))
		}
		for k, f := range docWords(d.Text, stop, key) {
			g := groups[k]
			if g == nil {
				g = &group{forms: map[string]int{}}
				groups[k] = g
			}
			g.p += pd * f.p
			for w, c := range f.forms {
				g.forms[w] += c
			}
		}
	}
	if p.Contrast && len(background) > 0 {
		// P(w|B): the mean of P(w|d) over the background (every
		// first-pass hit, the feedback documents among them). A word
		// scores P(w|R)·ln(P(w|R)/P(w|B)), its share of the KL divergence
		// of the feedback model from the result list's: words every hit
		// holds ("patients", "results") score nothing, words the top
		// holds and the rest lacks score high.
		bg := map[string]float64{}
		for _, d := range background {
			for k, f := range docWords(d.Text, stop, key) {
				if groups[k] != nil {
					bg[k] += f.p / float64(len(background))
				}
			}
		}
		for k, g := range groups {
			if b := bg[k]; b > 0 && g.p > b {
				g.p *= math.Log(g.p / b)
			} else {
				delete(groups, k)
			}
		}
	}
	type weighted struct {
		key, word string
		p         float64
	}
	model := make([]weighted, 0, len(groups))
	for k, g := range groups {
		model = append(model, weighted{key: k, word: mostFrequent(g.forms), p: g.p})
	}
	// Ties by word, so that the same documents always give the same query.
	slices.SortFunc(model, func(x, y weighted) int {
		if c := cmp.Compare(y.p, x.p); c != 0 {
			return c
		}
		return strings.Compare(x.word, y.word)
	})
	model = model[:min(len(model), p.Terms)]
	var mass float64
	for _, m := range model {
		mass += m.p
	}
	if mass == 0 {
		return orig
	}

	// Interpolate: the original words by key, then the new ones.
	qlen := 0
	for _, t := range orig {
		qlen += t.Count
	}
	type entry struct {
		word string
		w    float64
		orig bool
	}
	var entries []entry
	at := map[string]int{}
	for _, t := range orig {
		k := key(t.Word)
		if k == "" {
			k = t.Word
		}
		w := p.OriginalWeight * float64(t.Count) / float64(qlen)
		if i, ok := at[k]; ok {
			entries[i].w += w
			continue
		}
		at[k] = len(entries)
		entries = append(entries, entry{word: t.Word, w: w, orig: true})
	}
	for _, m := range model {
		w := (1 - p.OriginalWeight) * m.p / mass
		if i, ok := at[m.key]; ok {
			entries[i].w += w
			continue
		}
		if len(entries) == MaxTerms {
			break
		}
		at[m.key] = len(entries)
		entries = append(entries, entry{word: m.word, w: w})
	}
	return quantize(entries, func(e entry) (string, float64, bool) { return e.word, e.w, e.orig })
}

// quantize writes weights that sum to at most one as counts sharing
// MaxOccurrences: each its floor, then the largest remainders; an original
// word gets at least one, a new word with none is dropped.
func quantize[E any](entries []E, get func(E) (word string, w float64, orig bool)) []Term {
	type slot struct {
		i     int
		count int
		rem   float64
	}
	slots := make([]slot, len(entries))
	used := 0
	for i, e := range entries {
		_, w, orig := get(e)
		x := w * MaxOccurrences
		c := int(math.Floor(x))
		if orig && c == 0 {
			c, x = 1, 1
		}
		slots[i] = slot{i: i, count: c, rem: x - float64(c)}
		used += c
	}
	byRem := slices.Clone(slots)
	// Remainders equal but for float noise tie, and a tie goes to the
	// earlier word (the original ones come first).
	slices.SortStableFunc(byRem, func(x, y slot) int { return cmp.Compare(math.Round(y.rem*1e9), math.Round(x.rem*1e9)) })
	for _, s := range byRem {
		if used >= MaxOccurrences || s.rem <= 0 {
			break
		}
		slots[s.i].count++
		used++
	}
	// Minimum counts for original words can overshoot the cap: take the
	// excess from the largest counts, never below one.
	for used > MaxOccurrences {
		j := 0
		for i := range slots {
			if slots[i].count > slots[j].count {
				j = i
			}
		}
		if slots[j].count <= 1 {
			break
		}
		slots[j].count--
		used--
	}
	var terms []Term
	for i, e := range entries {
		if slots[i].count > 0 {
			word, _, _ := get(e)
			terms = append(terms, Term{Word: word, Count: slots[i].count})
		}
	}
	return terms
}

// mostFrequent returns the form seen most often, the smallest on a tie.
func mostFrequent(forms map[string]int) string {
	best, n := "", -1
	for w, c := range forms {
		if c > n || (c == n && w < best) {
			best, n = w, c
		}
	}
	return best
}

// QueryText writes terms as query text that Terms reads back as the same
// terms (each word as many times as its count), so that an expanded query
// travels to any full-text generator as ordinary text. Stop words are
// never among the terms Expand returns, so the store's analysis keeps
// every word.
func QueryText(terms []Term) string {
	var sb strings.Builder
	for _, t := range terms {
		for range t.Count {
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(t.Word)
		}
	}
	return sb.String()
}

// SameTerms reports whether a and b are the same terms with the same
// counts relative to each other (one a constant multiple of the other),
// which rank every document alike.
func SameTerms(a, b []Term) bool {
	if len(a) != len(b) || len(a) == 0 {
		return len(a) == len(b)
	}
	ratio := float64(b[0].Count) / float64(a[0].Count)
	for i := range a {
		if a[i].Word != b[i].Word || math.Abs(float64(b[i].Count)-ratio*float64(a[i].Count)) > 1e-9 {
			return false
		}
	}
	return true
}

// wordShare is one index term's share of a document's words, and the
// surface forms it was written in.
type wordShare struct {
	p     float64
	forms map[string]int
}

// docWords is P(w|d) of each index term (key) of text: its count over the
// count of the words kept (no stop words, no one-letter words, none longer
// than maxExpansionWordLen).
func docWords(text string, stop map[string]bool, key func(string) string) map[string]*wordShare {
	tf := map[string]int{}
	n := 0
	for _, w := range Words(text) {
		if stop[w] || utf8.RuneCountInString(w) < 2 || len(w) > maxExpansionWordLen {
			continue
		}
		tf[w]++
		n++
	}
	out := make(map[string]*wordShare, len(tf))
	for w, c := range tf {
		k := key(w)
		if k == "" {
			continue
		}
		f := out[k]
		if f == nil {
			f = &wordShare{forms: map[string]int{}}
			out[k] = f
		}
		f.p += float64(c) / float64(n)
		f.forms[w] += c
	}
	return out
}
