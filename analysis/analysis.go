package analysis

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"unicode"
)

// MaxTerms caps the distinct terms of a query: more add little to the
// ranking and cost an index scan each.
const MaxTerms = 64

// MaxOccurrences caps the sum of the terms' counts. FTS5 counts a repeated
// word by repeating it in the MATCH expression, a scan per repeat, so a
// query pasting one word a thousand times must not cost a thousand scans;
// both stores see the same capped counts.
const MaxOccurrences = 2 * MaxTerms

// Term is one distinct query word and how many times the query holds it.
type Term struct {
	Word  string
	Count int
}

// Analyzer turns query text into terms. The zero value keeps every word;
// New sets the stop words to remove. It is safe for concurrent use.
type Analyzer struct {
	stop map[string]bool
}

// New returns an analyzer that removes the given stop words (compared
// lower-cased) from queries.
func New(stopWords []string) *Analyzer {
	a := &Analyzer{stop: make(map[string]bool, len(stopWords))}
	for _, w := range stopWords {
		a.stop[strings.ToLower(w)] = true
	}
	return a
}

// Default returns the analyzer the stores use when not told otherwise: the
// English stop list.
func Default() *Analyzer { return New(English()) }

// Terms returns the distinct words of text in the order they first appear,
// each with its count, leaving out stop words and keeping at most MaxTerms
// distinct words whose counts sum to at most MaxOccurrences. A nil or zero
// analyzer removes no stop words. A query made only
// of stop words has no terms and finds nothing, as in Lucene and as
// Postgres's english configuration always did.
func (a *Analyzer) Terms(text string) []Term {
	var stop map[string]bool
	if a != nil {
		stop = a.stop
	}
	var terms []Term
	index := map[string]int{}
	for _, w := range Words(text) {
		if stop[w] {
			continue
		}
		if i, ok := index[w]; ok {
			terms[i].Count++
			continue
		}
		if len(terms) == MaxTerms {
			continue // later repeats of kept words still count
		}
		index[w] = len(terms)
		terms = append(terms, Term{Word: w, Count: 1})
	}
	// Every kept word counts once; repeats share what remains of the cap,
	// first come first served.
	extra := MaxOccurrences - len(terms)
	for i := range terms {
		more := min(terms[i].Count-1, extra)
		terms[i].Count = 1 + more
		extra -= more
	}
	return terms
}

// Words returns the words of text as the stores index them: the runs of
// letters, digits and combining marks (so that "é" written as e + U+0301
// stays one word, as the unicode61 tokenizer sees it), lower-cased.
// utf8.RuneError, what invalid bytes decode to, is not a letter, so invalid
// UTF-8 splits words.
func Words(text string) []string {
	fields := strings.FieldsFunc(text, func(r rune) bool { return !IsWordRune(r) })
	for i, f := range fields {
		fields[i] = strings.ToLower(f)
	}
	return fields
}

// IsWordRune reports whether r is part of a word.
func IsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

// English returns the English stop list: Snowball's, the one Postgres's
// english text search configuration drops (tsearch_data/english.stop), so
// that both stores leave out the same words. A new slice each call.
func English() []string {
	return strings.Fields(english)
}

// english is Snowball's English stop list, 127 words.
const english = `i me my myself we our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs themselves
what which who whom this that these those am is are was were be been being have has had
having do does did doing a an the and but if or because as until while of at by for with
about against between into through during before after above below to from up down in out
on off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will just
don should now`

// StopList resolves the H4R_STOP_WORDS setting: "english" (the default
// list), "none" (no stop words), or the path of a file of stop words,
// whitespace-separated, lines starting with # ignored.
func StopList(setting string) ([]string, error) {
	switch setting {
	case "english":
		return English(), nil
	case "none", "":
		return nil, nil
	}
	f, err := os.Open(setting)
	if err != nil {
		return nil, fmt.Errorf("reading the stop word file: %w", err)
	}
	defer f.Close()
	var words []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		words = append(words, Words(line)...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the stop word file %s: %w", setting, err)
	}
	return words, nil
}
