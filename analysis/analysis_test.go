package analysis_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/h4r/h4r/analysis"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		name string
		stop []string
		text string
		want []analysis.Term
	}{
		{"empty", analysis.English(), "", nil},
		{"stop words leave", analysis.English(), "What is the login page", []analysis.Term{{"login", 1}, {"page", 1}}},
		{"only stop words", analysis.English(), "to be or not to be", nil},
		{"no stop list keeps them", nil, "to be or not", []analysis.Term{{"to", 1}, {"be", 1}, {"or", 1}, {"not", 1}}},
		{"repeats counted in first-seen order", nil, "b a B b", []analysis.Term{{"b", 3}, {"a", 1}}},
		{"split like the index", nil, "login-spec: cafe\u0301 ab\xffcd", []analysis.Term{{"login", 1}, {"spec", 1}, {"cafe\u0301", 1}, {"ab", 1}, {"cd", 1}}},
		{"custom stop list is case-blind", []string{"Login"}, "LOGIN failure", []analysis.Term{{"failure", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := analysis.New(tt.stop).Terms(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Terms(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestTermsCaps(t *testing.T) {
	var words []string
	for i := range 70 {
		words = append(words, "w"+strings.Repeat("x", i))
	}
	terms := analysis.New(nil).Terms(strings.Join(words, " ") + " w w")
	if len(terms) != analysis.MaxTerms {
		t.Fatalf("%d terms, want %d", len(terms), analysis.MaxTerms)
	}
	if terms[0] != (analysis.Term{Word: "w", Count: 3}) {
		t.Errorf("first term %v: a kept word repeated after the cap still counts", terms[0])
	}
	terms = analysis.New(nil).Terms("a " + strings.Repeat("b ", 500) + "c")
	want := []analysis.Term{{"a", 1}, {"b", analysis.MaxOccurrences - 2}, {"c", 1}}
	if !slices.Equal(terms, want) {
		t.Errorf("Terms = %v, want %v", terms, want)
	}
}

func TestStopList(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "stop.txt")
	if err := os.WriteFile(file, []byte("# mine\nFoo bar\n\nbaz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		setting string
		want    []string
		wantErr bool
	}{
		{"english", "english", analysis.English(), false},
		{"none", "none", nil, false},
		{"file", file, []string{"foo", "bar", "baz"}, false},
		{"missing file", filepath.Join(dir, "nope"), nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := analysis.StopList(tt.setting)
			if (err != nil) != tt.wantErr {
				t.Fatalf("StopList(%q) error %v, want error %v", tt.setting, err, tt.wantErr)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("StopList(%q) = %v, want %v", tt.setting, got, tt.want)
			}
		})
	}
	if n := len(analysis.English()); n != 127 {
		t.Errorf("English has %d words, want Snowball's 127", n)
	}
}

// FuzzTerms checks the invariants of any query's terms: distinct, non-empty
// words of word characters, no stop word, counts at least 1 and within the
// caps, and nothing lost that the text held once (below the caps).
func FuzzTerms(f *testing.F) {
	for _, s := range []string{"the login page", `"x" OR y*`, "a\xffb", "Straße STRASSE", "to be or not"} {
		f.Add(s)
	}
	a := analysis.Default()
	stop := map[string]bool{}
	for _, w := range analysis.English() {
		stop[w] = true
	}
	f.Fuzz(func(t *testing.T, text string) {
		terms := a.Terms(text)
		if len(terms) > analysis.MaxTerms {
			t.Fatalf("%d terms", len(terms))
		}
		seen := map[string]bool{}
		sum := 0
		for _, term := range terms {
			if term.Word == "" || term.Count < 1 || seen[term.Word] || stop[term.Word] {
				t.Fatalf("bad term %+v in %v", term, terms)
			}
			if !utf8.ValidString(term.Word) || strings.IndexFunc(term.Word, func(r rune) bool { return !analysis.IsWordRune(r) }) >= 0 {
				t.Fatalf("term %q holds a non-word character", term.Word)
			}
			seen[term.Word] = true
			sum += term.Count
		}
		if sum > analysis.MaxOccurrences {
			t.Fatalf("counts sum to %d", sum)
		}
		words := analysis.Words(text)
		if len(words) < analysis.MaxTerms {
			for _, w := range words {
				if !stop[w] && !seen[w] {
					t.Fatalf("word %q of %q lost", w, text)
				}
			}
		}
	})
}
