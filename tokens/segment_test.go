package tokens

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// whole counts text as tiktoken does, in one piece: the slow path Count
// replaces.
func whole(c *Counter, text string) int { return len(c.enc.EncodeOrdinary(text)) }

// segmentCases are texts where a cut before a space could go wrong: runs
// of spaces, other whitespace around the space, contractions, digits,
// punctuation runs, non-ASCII before the space, JSON as items deliver it.
var segmentCases = []struct{ name, text string }{
	{"empty", ""},
	{"one space", " "},
	{"words", "hello world again"},
	{"two spaces", "hello  world"},
	{"trailing spaces", "hello   "},
	{"leading spaces", "   hello"},
	{"newline then space", "hello\n world"},
	{"space then newline", "hello \nworld"},
	{"spaces around newline", "a  \n  b"},
	{"tab and space", "a\t b \tc"},
	{"crlf", "line one \r\n line two"},
	{"contractions", "it's we'll they're I'M don' t 's"},
	{"digits", "12345 678 9 1234567"},
	{"punctuation runs", "x !! y ?! z ... (a) [b] {c}"},
	{"slash and newline", "a/ b /\n c"},
	{"non-ASCII before space", "café résumé naïve 日本語 テスト ß ẞ"},
	{"no-break and ideographic space", "a\u00a0 b\u3000 c \u00a0d"},
	{"json", `{"id":"mem-0000012","kind":"note","text":"login page failed: element #login-button not found","metadata":{"tags":["bench","ingest"],"trust":0.8}}`},
	{"special marker", "see <|endoftext|> here <|fim_prefix|>"},
	{"emoji", "ship it 🚀 now 👍🏽 ok"},
	{"mixed case runs", "HTTPServer getHTTPResponse XMLHttpRequest iPhone"},
}

// Counting in segments with the cache gives tiktoken's count of the
// whole text, for both encodings, cold and warm.
func TestCountEqualsTiktoken(t *testing.T) {
	for _, enc := range []string{CL100K, O200K} {
		c, err := New(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range segmentCases {
			t.Run(enc+"/"+tc.name, func(t *testing.T) {
				want := whole(c, tc.text)
				for _, pass := range []string{"cold", "warm"} {
					if got := c.Count(tc.text); got != want {
						t.Errorf("%s: Count(%q) = %d, tiktoken %d", pass, tc.text, got, want)
					}
				}
			})
		}
	}
}

// The same on every line of the BEIR corpora (JSON lines: scientific
// prose, quotes, numbers, unicode), with the cache shared across lines as
// an ingest shares it.
func TestCountEqualsTiktokenOnCorpora(t *testing.T) {
	root := os.Getenv("H4R_DATASETS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "datasets")
	}
	for _, enc := range []string{CL100K, O200K} {
		c, err := New(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"scifact", "cisi", "cranfield"} {
			t.Run(enc+"/"+name, func(t *testing.T) {
				f, err := os.Open(filepath.Join(root, name, "corpus.jsonl"))
				if err != nil {
					t.Skipf("dataset %s not found (%v): it lives in ../shared/datasets beside the project, or set H4R_DATASETS", name, err)
				}
				defer f.Close()
				sc := bufio.NewScanner(f)
				sc.Buffer(nil, 1<<20)
				lines, step := 0, 1
				if testing.Short() {
					step = 10
				}
				for sc.Scan() {
					lines++
					if lines%step != 0 {
						continue
					}
					line := sc.Text()
					if got, want := c.Count(line), whole(c, line); got != want {
						t.Fatalf("line %d: Count = %d, tiktoken %d: %q", lines, got, want, line)
					}
				}
				if err := sc.Err(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// FuzzCountEqualsTiktoken: any text, both encodings, counted twice (the
// second time from the cache).
func FuzzCountEqualsTiktoken(f *testing.F) {
	for _, tc := range segmentCases {
		f.Add(tc.text)
	}
	var counters []*Counter
	for _, enc := range []string{CL100K, O200K} {
		c, err := New(enc)
		if err != nil {
			f.Fatal(err)
		}
		counters = append(counters, c)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, c := range counters {
			want := whole(c, text)
			for range 2 {
				if got := c.Count(text); got != want {
					t.Fatalf("%s: Count(%q) = %d, tiktoken %d", c.name, text, got, want)
				}
			}
		}
	})
}
