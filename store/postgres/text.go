package postgres

import (
	"math"
	"strings"

	"github.com/h4r/h4r/analysis"
)

// BM25 parameters, the usual ones (and FTS5's).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// textConfig is the text search configuration that stems words and drops
// stop words. It is fixed: postings written with one configuration cannot
// be searched with another.
const textConfig = "english"

// words returns the runs of letters, digits and combining marks in text,
// lower-cased and joined by single spaces: what to_tsvector is given, for
// documents and queries alike. Splitting in Go keeps every character of
// search syntax, NUL bytes and invalid UTF-8 away from Postgres, and
// tokenizes as the SQLite store's unicode61 tokenizer does (one rule,
// analysis.IsWordRune). distinct
// keeps each word once, and at most limit words (0: no limit).
func words(text string, distinct bool, limit int) string {
	var seen map[string]bool
	if distinct {
		seen = map[string]bool{}
	}
	var sb strings.Builder
	n := 0
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !analysis.IsWordRune(r) }) {
		w = strings.ToLower(w)
		if distinct {
			if seen[w] {
				continue
			}
			seen[w] = true
		}
		if limit > 0 && n == limit {
			break
		}
		n++
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(w)
	}
	return sb.String()
}

// queryText writes query terms as to_tsvector's input: each word as many
// times as the query asks it (queryTermsSQL counts them back).
func queryText(terms []analysis.Term) string {
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

// impact is the BM25 term-frequency component of a posting: how much one
// occurrence count tf in a document of length dl weighs, relative to the
// average length avgdl. A query term contributes idf·impact.
func impact(tf, dl int, avgdl float64) float32 {
	if avgdl <= 0 {
		avgdl = 1
	}
	f := float64(tf)
	return float32(f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(dl)/avgdl)))
}

// idf is BM25's inverse document frequency in Lucene's form, which stays
// positive for a term held by more than half the documents (the classic
// form goes negative there, and would rank an item lower for matching).
func idf(n, df int64) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}
