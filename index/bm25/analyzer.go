package bm25

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/h4r/h4r/analysis"
)

// Analyze appends the terms of text to dst, in text order with repeats, and
// returns the extended slice. It is the one analysis of H4R's full-text
// index: documents (Index.Add) and query words (Query) both go through it,
// so that a query word finds the documents that hold it.
//
// A term is a run of letters, digits and combining marks (as FTS5's
// unicode61 tokenizer splits), lower-cased, with the general-purpose
// diacritics (U+0300–U+036F: the accents of Latin, Greek and Cyrillic)
// removed, then reduced by the Snowball English stemmer. A run that is
// nothing but such diacritics yields no term.
func Analyze(dst []string, text string) []string {
	eachTerm(text, nil, func(t string) { dst = append(dst, t) })
	return dst
}

// Query turns a query's terms, as package analysis makes them (its word
// split, its stop words, its query-term counts and caps: the same for both
// stores), into the index's terms with their query frequencies (qtf), the
// form Index.Search takes. Each word is normalised as Analyze normalises a
// document's words (diacritics, stem); words that share a stem add their
// counts, as FTS5's porter tokenizer and Postgres's english configuration
// count them. Words left empty by the normalisation (a lone diacritic) are
// dropped. It returns an empty map when nothing is left.
func Query(terms []analysis.Term) map[string]int {
	qtf := make(map[string]int, len(terms))
	for _, t := range terms {
		// A word of analysis.Words is one run of word runes, lower-cased;
		// eachTerm splits the same way, so it yields that one term.
		eachTerm(t.Word, nil, func(term string) { qtf[term] += t.Count })
	}
	return qtf
}

// Term returns the index term one query word stands for (folded and
// stemmed as Analyze does), or "" when nothing is left: the key by which
// query expansion groups a document's words.
func Term(word string) string { return normalize(word, nil) }

// eachTerm calls fn with each term of text, in order, stemming through
// cache (which may be nil).
func eachTerm(text string, cache stemCache, fn func(string)) {
	eachWord(text, func(w string) { fn(cache.stem(w)) })
}

// eachWord calls fn with each word of text, in order, lower-cased and
// folded (fold) but not stemmed; a word folded to nothing is skipped.
func eachWord(text string, fn func(string)) {
	start := -1
	for i, r := range text {
		if isTermRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if w := fold(text[start:i]); w != "" {
				fn(w)
			}
			start = -1
		}
	}
	if start >= 0 {
		if w := fold(text[start:]); w != "" {
			fn(w)
		}
	}
}

// isTermRune reports whether r is part of a word: a letter, a digit or a
// combining mark (so that "é" written as e + U+0301 stays one word).
// utf8.RuneError (an invalid byte) is not: invalid input splits words and
// never reaches a term.
// It is analysis.IsWordRune, the split both stores' query analysis uses,
// with a fast path for ASCII.
func isTermRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return analysis.IsWordRune(r)
}

// normalize turns one word into its term, or "" when nothing is left.
func normalize(word string, cache stemCache) string {
	if word = fold(word); word == "" {
		return ""
	}
	return cache.stem(word)
}

// fold lower-cases one word and removes its diacritics (foldDiacritics),
// or returns "" when nothing is left.
func fold(word string) string {
	for i := 0; i < len(word); i++ {
		if word[i] >= utf8.RuneSelf {
			return foldDiacritics(strings.ToLower(word))
		}
	}
	return strings.ToLower(word)
}

// stem returns the Snowball English stem of a lower-cased word, or the
// word when the stemmer leaves nothing. Stop words are stemmed too (true):
// FTS5's porter tokenizer stems every word, and dropping stop words is a
// separate decision.
func stem(word string) string {
	if t := english.Stem(word, true); t != "" && utf8.ValidString(t) {
		return t
	}
	return word
}

// maxCachedStems bounds a stemCache: about 10 MB. The words met first,
// which in a Zipf-distributed vocabulary include the frequent ones, stay.
const maxCachedStems = 1 << 17

// stemCache remembers the stems of the words it has seen: the stemmer
// costs about a microsecond a word and was most of a rebuild's time, and a
// corpus repeats its words. A nil cache stems every word. It is not safe
// for concurrent use: its owner locks it or keeps it to one goroutine.
type stemCache map[string]string // lower-cased word → stem

func (c stemCache) stem(word string) string {
	if c == nil {
		return stem(word)
	}
	if t, ok := c[word]; ok {
		return t
	}
	t := stem(word)
	if len(c) < maxCachedStems {
		// Clones, so that the cache keeps no document's text alive.
		t = strings.Clone(t)
		c[strings.Clone(word)] = t
	}
	return t
}

// Stems remembers the stems of up to a fixed number of words for Analyze
// calls on many goroutines: the learned embedder analyses the query and
// the feedback texts of every pack, and the stemmer was most of that. A
// word's stem never changes, so a remembered one is always right; past
// the bound, new words are stemmed and not remembered, and the words met
// first (in a Zipf-distributed vocabulary, the frequent ones) stay. Words
// longer than maxRememberedWord bytes (identifiers, hex) are never
// remembered, so that the memory is bounded in bytes too. A nil *Stems
// remembers nothing. It is safe for concurrent use.
type Stems struct {
	mu    sync.RWMutex
	stems map[string]string // folded word → stem
	limit int
}

// maxRememberedWord is the longest word, in bytes, a Stems remembers.
const maxRememberedWord = 64

// NewStems returns a memory of up to limit stems.
func NewStems(limit int) *Stems {
	return &Stems{stems: map[string]string{}, limit: max(limit, 0)}
}

// Analyze is Analyze, with the stems of the words of text looked up in s
// under one read lock, and those it lacked stemmed and added under one
// write lock.
func (s *Stems) Analyze(dst []string, text string) []string {
	if s == nil {
		return Analyze(dst, text)
	}
	var missed []int      // where in dst a folded word waits for its stem
	rememberable := false // a missed word is short enough to remember
	s.mu.RLock()
	eachWord(text, func(w string) {
		if t, ok := s.stems[w]; ok {
			dst = append(dst, t)
			return
		}
		missed = append(missed, len(dst))
		dst = append(dst, w)
		rememberable = rememberable || len(w) <= maxRememberedWord
	})
	full := len(s.stems) >= s.limit
	s.mu.RUnlock()
	if len(missed) == 0 {
		return dst
	}
	words := make([]string, len(missed))
	for i, at := range missed {
		words[i] = dst[at]
		dst[at] = stem(dst[at])
	}
	if full || !rememberable {
		return dst // nothing would be remembered: no write lock to queue on
	}
	s.mu.Lock()
	for i, at := range missed {
		if len(s.stems) >= s.limit {
			break
		}
		if _, ok := s.stems[words[i]]; !ok && len(words[i]) <= maxRememberedWord {
			// Clones, so that the memory keeps no text alive.
			w := strings.Clone(words[i])
			t := w
			if dst[at] != words[i] {
				t = strings.Clone(dst[at])
			}
			s.stems[w] = t
		}
	}
	s.mu.Unlock()
	return dst
}

// Len is how many stems s remembers.
func (s *Stems) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.stems)
}

// foldDiacritics decomposes s, drops the general-purpose combining
// diacritics and recomposes what is left, so that "Café", "cafe\u0301"
// and "cafe" meet. Marks of other blocks (Indic vowel signs, Hebrew
// points) carry meaning and are kept.
func foldDiacritics(s string) string {
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(diacritics)), norm.NFC)
	out, _, err := transform.String(t, s)
	if err != nil {
		// The transformers above accept any valid UTF-8, which word is.
		return s
	}
	return out
}

// diacritics is the Combining Diacritical Marks block, U+0300–U+036F.
var diacritics = &unicode.RangeTable{R16: []unicode.Range16{{Lo: 0x0300, Hi: 0x036F, Stride: 1}}}
