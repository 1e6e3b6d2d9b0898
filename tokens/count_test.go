package tokens

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pkoukk/tiktoken-go"

	"github.com/h4r/h4r/internal/datasets"
)

// reference is tiktoken-go's encoder of the named encoding: the
// implementation whose counts Count must give.
func reference(tb testing.TB, name string) *tiktoken.Tiktoken {
	tb.Helper()
	useOfflineLoader()
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		tb.Fatal(err)
	}
	return enc
}

// countCases are texts where a hand-written pre-tokenizer or a cut
// before a space could go wrong: runs of spaces, other whitespace around
// a space, contractions in both cases, digits, punctuation runs,
// non-ASCII before a space, JSON as items deliver it, invalid UTF-8.
var countCases = []struct{ name, text string }{
	{"empty", ""},
	{"one space", " "},
	{"words", "hello world again"},
	{"two spaces", "hello  world"},
	{"trailing spaces", "hello   "},
	{"leading spaces", "   hello"},
	{"newline then space", "hello\n world"},
	{"space then newline", "hello \nworld"},
	{"spaces around newline", "a  \n  b"},
	{"newlines in a run", " \n \r\n\t x\n\n"},
	{"tab and space", "a\t b \tc"},
	{"tab before word", "\tword\u00a0word\u3000word"},
	{"crlf", "line one \r\n line two"},
	{"contractions", "it's we'll they're I'M don' t 's"},
	{"contractions upper", "IT'S WE'LL THEY'RE YOU'VE HE'D 'T 'LL 'Ll 'rE X'Sad Y'REd Z'LLama Q'VEry W'Mom K'Dad O'Tis"},
	{"apostrophe runs", "''s ?'s '' 'x 'sad 're' '"},
	{"digits", "12345 678 9 1234567 ١٢٣٤ ²³ ½"},
	{"punctuation runs", "x !! y ?! z ... (a) [b] {c} ((word ?\n\n!\r\n"},
	{"slash and newline", "a/ b /\n c"},
	{"non-ASCII before space", "café résumé naïve 日本語 テスト ß ẞ"},
	{"no-break and ideographic space", "a\u00a0 b\u3000 c \u00a0d"},
	{"json", `{"id":"mem-0000012","kind":"note","text":"login page failed: element #login-button not found","metadata":{"tags":["bench","ingest"],"trust":0.8}}`},
	{"special marker", "see <|endoftext|> here <|fim_prefix|>"},
	{"emoji", "ship it 🚀 now 👍🏽 ok"},
	{"mixed case runs", "HTTPServer getHTTPResponse XMLHttpRequest iPhone"},
	{"combining marks", "e\u0301te\u0301 n\u0303 \u0301x"},
	{"invalid bytes", "a\xffb \xc3( \xed\xa0\x80 x\xe2\x82"},
	{"control characters", "a\x00b\x1fc\x7f d\x0be\x0cf\u0085g"},
	{"long word", "pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism"},
	{"long piece", string(make([]byte, 300)) + "xyz"},
}

// Count gives the reference's count, both encodings, twice (the second
// from whatever the counter remembers).
func TestCountMatchesReference(t *testing.T) {
	for _, enc := range []string{CL100K, O200K} {
		c, err := New(enc)
		if err != nil {
			t.Fatal(err)
		}
		ref := reference(t, enc)
		for _, tc := range countCases {
			t.Run(enc+"/"+tc.name, func(t *testing.T) {
				want := len(ref.EncodeOrdinary(tc.text))
				for _, pass := range []string{"cold", "warm"} {
					if got := c.Count(tc.text); got != want {
						t.Errorf("%s: Count(%q) = %d, reference %d", pass, tc.text, got, want)
					}
				}
			})
		}
	}
}

// The same on every text of the shared datasets (corpora and queries):
// each JSON line as it is, as an item delivered as JSON would be, and its
// decoded title and text (prose with newlines, quotes, numbers, unicode).
// The counter is shared across texts as an ingest shares it.
func TestCountMatchesReferenceOnDatasets(t *testing.T) {
	encodings := []string{CL100K, O200K}
	if testing.Short() {
		encodings = encodings[:1]
	}
	for _, enc := range encodings {
		c, err := New(enc)
		if err != nil {
			t.Fatal(err)
		}
		ref := reference(t, enc)
		for _, name := range []string{"scifact", "cisi", "cranfield", "longmemeval-mini"} {
			t.Run(enc+"/"+name, func(t *testing.T) {
				t.Parallel()
				dir := datasets.Dir(t, name)
				counted := 0
				for _, file := range []string{"corpus.jsonl", "queries.jsonl"} {
					eachLine(t, filepath.Join(dir, file), func(line string) {
						var doc struct{ Title, Text string }
						if err := json.Unmarshal([]byte(line), &doc); err != nil {
							t.Fatalf("%s: %v", file, err)
						}
						texts := []string{line, doc.Title, doc.Text}
						if enc != CL100K {
							texts = texts[:1] // o200k's counting is cut in segments only
						}
						for _, text := range texts {
							if got, want := c.Count(text), len(ref.EncodeOrdinary(text)); got != want {
								t.Fatalf("%s: Count = %d, reference %d: %q", file, got, want, text)
							}
							counted++
						}
					})
				}
				if counted < 1000 {
					t.Fatalf("only %d texts in %s", counted, dir)
				}
			})
		}
	}
}

func eachLine(t *testing.T, path string, f func(string)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		f(sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// FuzzCountMatchesReference: any text, invalid UTF-8 included, both
// encodings, counted twice.
func FuzzCountMatchesReference(f *testing.F) {
	for _, tc := range countCases {
		f.Add(tc.text)
	}
	for _, s := range []string{"\xff\xfe'S", "  \t\n\n  \r 1234567", "'\u212a'\u0130'ſ", "٣٤٥ x²", "Ⅻ ⅻ ǅ ʰ", "\u00a0\u1680\u2028\u205f\ufeff"} {
		f.Add(s)
	}
	type pair struct {
		c   *Counter
		ref *tiktoken.Tiktoken
	}
	var pairs []pair
	for _, enc := range []string{CL100K, O200K} {
		c, err := New(enc)
		if err != nil {
			f.Fatal(err)
		}
		pairs = append(pairs, pair{c, reference(f, enc)})
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range pairs {
			want := len(p.ref.EncodeOrdinary(text))
			for range 2 {
				if got := p.c.Count(text); got != want {
					t.Fatalf("%s: Count(%q) = %d, reference %d", p.c.name, text, got, want)
				}
			}
		}
	})
}
