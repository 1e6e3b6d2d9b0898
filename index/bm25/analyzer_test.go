package bm25_test

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/h4r/h4r/analysis"
	"github.com/h4r/h4r/index/bm25"
)

func TestAnalyze(t *testing.T) {
	// Each case is analysed again through memories of stems shared by all
	// the cases (one that keeps every stem, one that keeps a single one),
	// twice, so that the second pass reads what the first remembered.
	shared, small := bm25.NewStems(1<<10), bm25.NewStems(1)
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"only punctuation and spaces", " ,.;!? -- \t\n", nil},
		{"lower-cases", "ERROR Timeout", []string{"error", "timeout"}},
		{"stems inflections to one term", "running runs", []string{"run", "run"}},
		{"stems plurals", "caresses ponies", []string{"caress", "poni"}},
		{"keeps stop words, stemmed", "the and of", []string{"the", "and", "of"}},
		{"splits on punctuation", "login-page/checkout_flow", []string{"login", "page", "checkout", "flow"}},
		{"splits on apostrophes", "don't", []string{"don", "t"}},
		{"keeps digits, splits decimals", "x86_64 3.14 1990s", []string{"x86", "64", "3", "14", "1990s"}},
		{"removes Latin diacritics", "Café naïve ÅNGSTRÖM", []string{"cafe", "naiv", "angstrom"}},
		{"decomposed accent equals composed", "cafe\u0301", []string{"cafe"}},
		{"dotted capital I folds to i", "İstanbul", []string{"istanbul"}},
		{"lone diacritic is no term", "a \u0301 b", []string{"a", "b"}},
		{"keeps marks outside the diacritics block", "\u0915\u093f", []string{"\u0915\u093f"}},
		{"a CJK run is one term", "日本語のテキスト 中文", []string{"日本語のテキスト", "中文"}},
		{"Greek is lower-cased", "ΣΟΦΙΑ", []string{"σοφια"}},
		{"invalid UTF-8 splits words", "ab\xffcd", []string{"ab", "cd"}},
		{"repeats are kept in order", "cache miss cache", []string{"cach", "miss", "cach"}},
		{"a long word is one term", strings.Repeat("ab12", 40) + " tests", []string{strings.Repeat("ab12", 40), "test"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bm25.Analyze(nil, tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("Analyze(%q) = %q, want %q", tc.text, got, tc.want)
			}
			for pass := range 2 {
				for _, st := range []*bm25.Stems{shared, small, nil} {
					if got := st.Analyze([]string{"kept"}, tc.text); !slices.Equal(got[1:], tc.want) || got[0] != "kept" {
						t.Errorf("pass %d: Stems.Analyze(%q) = %q, want \"kept\" then %q", pass, tc.text, got, tc.want)
					}
				}
			}
		})
	}
	if small.Len() != 1 {
		t.Errorf("a memory of 1 stem holds %d", small.Len())
	}
	var none *bm25.Stems
	if none.Len() != 0 {
		t.Error("a nil memory holds stems")
	}
}

// TestStemsSkipLongWords: a word over 64 bytes is stemmed but not
// remembered; one of 64 is.
func TestStemsSkipLongWords(t *testing.T) {
	st := bm25.NewStems(10)
	st.Analyze(nil, strings.Repeat("x", 65))
	if st.Len() != 0 {
		t.Errorf("a word of 65 bytes was remembered")
	}
	st.Analyze(nil, strings.Repeat("x", 64))
	if st.Len() != 1 {
		t.Errorf("a word of 64 bytes was not remembered (%d stems)", st.Len())
	}
}

// TestStemsConcurrent shares one memory of stems among goroutines (run
// with -race) that analyse overlapping texts, and checks every answer.
func TestStemsConcurrent(t *testing.T) {
	texts := []string{"Running tests failed", "the runner runs", "Café cafe\u0301 failures", "connected connections", "failed tests again"}
	want := make([][]string, len(texts))
	for i, text := range texts {
		want[i] = bm25.Analyze(nil, text)
	}
	st := bm25.NewStems(6)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var buf []string
			for i := range 200 {
				j := (g + i) % len(texts)
				if buf = st.Analyze(buf[:0], texts[j]); !slices.Equal(buf, want[j]) {
					t.Errorf("Stems.Analyze(%q) = %q, want %q", texts[j], buf, want[j])
					return
				}
			}
		})
	}
	wg.Wait()
	if n := st.Len(); n != 6 {
		t.Errorf("the memory holds %d stems, want its bound 6", n)
	}
}

func TestAnalyzeAppends(t *testing.T) {
	got := bm25.Analyze([]string{"kept"}, "Tests")
	if want := []string{"kept", "test"}; !slices.Equal(got, want) {
		t.Errorf("Analyze appended %q, want %q", got, want)
	}
}

func TestQuery(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop []string
		text string
		want map[string]int
	}{
		{"repeats counted", nil, "the cat and the hat, and THE bat", map[string]int{"the": 3, "cat": 1, "and": 2, "hat": 1, "bat": 1}},
		{"stop words left out", analysis.English(), "the cat and the hat, and THE bat", map[string]int{"cat": 1, "hat": 1, "bat": 1}},
		{"stemmed forms add their counts", nil, "Connect connected connection", map[string]int{"connect": 3}},
		{"diacritics folded as in documents", nil, "Café cafe\u0301 cafe", map[string]int{"cafe": 3}},
		{"a lone diacritic is no term", nil, "a \u0301 b", map[string]int{"a": 1, "b": 1}},
		{"no words", nil, "?! --", map[string]int{}},
		{"only stop words", analysis.English(), "to be or not to be", map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bm25.Query(analysis.New(tc.stop).Terms(tc.text)); !maps.Equal(got, tc.want) {
				t.Errorf("Query(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
}

// FuzzAnalyze checks the analysis of arbitrary input: it never panics, and
// every term is non-empty, valid UTF-8, made of word characters only, and
// what Query counts of the text's words (below analysis's caps).
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"", "Running tests failed", "Café cafe\u0301", "\xff\xfe", "İ\u0307", "日本語", "a\u0301\u0301\u0301", "ﬁ ß ǅ", "yyyy ies sses"} {
		f.Add(s)
	}
	shared := bm25.NewStems(1 << 10)
	f.Fuzz(func(t *testing.T, text string) {
		terms := bm25.Analyze(nil, text)
		for range 2 {
			if got := shared.Analyze(nil, text); !slices.Equal(got, terms) {
				t.Fatalf("Stems.Analyze(%q) = %q, Analyze gave %q", text, got, terms)
			}
		}
		for _, term := range terms {
			if term == "" || !utf8.ValidString(term) {
				t.Fatalf("Analyze(%q) gave term %q", text, term)
			}
			for _, r := range term {
				if !bm25.IsTermRune(r) {
					t.Fatalf("Analyze(%q) gave term %q holding %q", text, term, r)
				}
			}
		}
		if len(analysis.Words(text)) > analysis.MaxTerms {
			return // the caps cut the query
		}
		qtf := bm25.Query(analysis.New(nil).Terms(text))
		n := 0
		for _, c := range qtf {
			n += c
		}
		if n != len(terms) {
			t.Fatalf("Query(%q) counts %d terms, Analyze gave %d", text, n, len(terms))
		}
	})
}

// TestBatchedAnalysisEqualsAnalysisAlone checks that analysing texts
// together gives the Docs of each text analysed alone: PrepareAll; a
// memory of stems with no memory, one that fills up within the texts, one
// that holds them all, and the same memory a second time, when every stem
// is remembered; and a Preparer's batches, which keep their stems and
// buffers between them.
func TestBatchedAnalysisEqualsAnalysisAlone(t *testing.T) {
	texts := []string{
		"Running runners ran; the runner runs",
		"Café CAFÉ cafe naïve naive",
		"flaky login selectors flaky",
		strings.Repeat("x", 80) + " " + strings.Repeat("x", 80) + " words",
		"",
		"Running, running: the same words again",
	}
	for i := range 600 { // past one worker's share, so that several run
		texts = append(texts, fmt.Sprintf("note %d about caching and cached items %d", i%37, i%11))
	}
	// Each text analysed alone, with no buffer or memory shared between
	// texts, is the reference; PrepareAll is checked against it too.
	var want []bm25.Doc
	x := bm25.New()
	for _, text := range texts {
		want = append(want, x.Prepare(text))
	}
	if got := bm25.PrepareAll(texts); !reflect.DeepEqual(got, want) {
		t.Fatal("PrepareAll differs from analysing each text alone")
	}
	for _, tc := range []struct {
		name  string
		stems *bm25.Stems
	}{
		{"no memory", nil},
		{"a memory that fills", bm25.NewStems(5)},
		{"a memory of every word", bm25.NewStems(1 << 15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for pass := range 2 {
				if got := tc.stems.PrepareAll(texts); !reflect.DeepEqual(got, want) {
					for i := range got {
						if !reflect.DeepEqual(got[i], want[i]) {
							t.Fatalf("pass %d, text %d %q: %+v, alone %+v", pass, i, texts[i], got[i], want[i])
						}
					}
					t.Fatalf("pass %d: %d Docs, want %d", pass, len(got), len(want))
				}
			}
		})
	}
	t.Run("a Preparer's batches", func(t *testing.T) {
		var p bm25.Preparer
		var got []bm25.Doc
		for _, batch := range [][]string{texts[:3], texts[3:400], texts[400:401], texts[401:], texts} {
			got = append(got, p.PrepareAll(batch)...)
		}
		if !reflect.DeepEqual(got, append(slices.Clone(want[:len(want):len(want)]), want...)) {
			t.Fatal("a Preparer's batches differ from each text analysed alone")
		}
	})
}
