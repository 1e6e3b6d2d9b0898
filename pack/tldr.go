package pack

import (
	"cmp"
	"iter"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/words"
)

// sentence is one candidate TL;DR sentence.
type sentence struct {
	text   string
	itemID string
	rank   int    // position of its item among the kept entries
	pos    int    // position within its item's text
	has    []bool // has[i]: the sentence holds the query's i-th term
	score  float64
}

// summarize picks the n sentences of the kept items' delivered text that
// best match the query: each scores the idf-weighted count of the query
// terms it holds (idf over all candidate sentences, so a term every
// sentence has counts little). Ties go to the higher-ranked item, then the
// earlier sentence. When no sentence shares a term with the query, the
// TL;DR is the first sentence of each of the top n items. A sentence
// holding the redaction marker says nothing useful and hints at what was
// hidden, so it is skipped.
func summarize(query string, kept []*Entry, n int, marker string) h4r.TLDR {
	tldr := h4r.TLDR{Sentences: []h4r.Sentence{}, Citations: []string{}}
	if n <= 0 || len(kept) == 0 {
		return tldr
	}
	queryTerms := terms(query)
	var all []sentence
	for rank, e := range kept {
		for pos, s := range splitSentences(e.Delivered.Text) {
			if strings.Contains(s, marker) {
				continue
			}
			all = append(all, sentence{text: s, itemID: e.Delivered.ID, rank: rank, pos: pos, has: termsHeld(s, queryTerms)})
		}
	}

	df := make([]int, len(queryTerms))
	for _, s := range all {
		for i, h := range s.has {
			if h {
				df[i]++
			}
		}
	}
	var matching []sentence
	for _, s := range all {
		for i, h := range s.has {
			if h {
				s.score += math.Log(1 + float64(len(all))/float64(df[i]))
			}
		}
		if s.score > 0 {
			matching = append(matching, s)
		}
	}
	slices.SortStableFunc(matching, func(a, b sentence) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.rank, b.rank), cmp.Compare(a.pos, b.pos))
	})

	chosen := matching
	if len(matching) == 0 {
		// Fall back to the lead sentence of the top items: the ranking
		// already says they matter most.
		chosen = nil
		led := map[string]bool{}
		for _, s := range all {
			if !led[s.itemID] {
				led[s.itemID] = true
				chosen = append(chosen, s)
			}
		}
	}

	var texts []string
	seen := map[string]bool{}
	for _, s := range chosen {
		if len(tldr.Sentences) == n {
			break
		}
		if seen[s.text] {
			continue
		}
		seen[s.text] = true
		tldr.Sentences = append(tldr.Sentences, h4r.Sentence{Text: s.text, ItemID: s.itemID, Score: math.Round(s.score*1e4) / 1e4})
		if !slices.Contains(tldr.Citations, s.itemID) {
			tldr.Citations = append(tldr.Citations, s.itemID)
		}
		texts = append(texts, terminated(s.text))
	}
	tldr.Text = strings.Join(texts, " ")
	return tldr
}

// splitSentences splits text at line breaks and at '.', '!' or '?'
// followed by white space or the end, keeping the punctuation. Pieces
// without a letter or digit are dropped.
func splitSentences(text string) []string {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if strings.IndexFunc(s, isWordRune) >= 0 {
			out = append(out, s)
		}
	}
	start := 0
	for i, r := range text {
		switch r {
		case '\n', '\r':
			add(text[start:i])
			start = i + 1
		case '.', '!', '?':
			next := i + 1
			if next == len(text) || isSpaceByte(text[next]) {
				add(text[start:next])
				start = next
			}
		}
	}
	add(text[start:])
	return out
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// terminated returns s ending in '.', '!' or '?', so that joined sentences
// read as sentences.
func terminated(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

// isStopword reports whether w carries no meaning for matching a query.
func isStopword(w string) bool {
	switch w {
	case "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "with", "by", "from", "as",
		"is", "are", "was", "were", "be", "been", "it", "its", "this", "that", "these", "those",
		"what", "which", "who", "how", "why", "when", "where", "do", "does", "did",
		"i", "we", "you", "my", "our", "me", "about", "into", "any", "all", "some",
		"there", "their", "has", "have", "had":
		return true
	}
	return false
}

// terms returns the distinct normalised terms of s, in order of appearance:
// lower-case runs of letters and digits, stopwords dropped, a plural "s"
// removed so that "failures" matches "failure".
func terms(s string) []string {
	var out []string
	for t := range normalised(s) {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// normalised yields the normalised terms of s, repeats included (terms).
func normalised(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for _, w := range words.Lower(s) {
			if !isStopword(w) && !yield(stem(w)) {
				return
			}
		}
	}
}

// termsHeld reports, for each of the query's terms, whether s has a word of
// that term: only the query's few terms are looked for, rather than every
// term of every sentence collected.
func termsHeld(s string, queryTerms []string) []bool {
	has := make([]bool, len(queryTerms))
	if len(queryTerms) == 0 {
		return has
	}
	for t := range normalised(s) {
		for i, q := range queryTerms {
			if t == q {
				has[i] = true
			}
		}
	}
	return has
}

// stem strips a plural ending: "issues" → "issue", "queries" → "query".
// Anything smarter would need a language model of its own.
func stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}
