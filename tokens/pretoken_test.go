package tokens

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// expressionPieces cuts text with cl100kPattern as tiktoken-go does
// (regexp2, on the text's runes), returning the pieces.
func expressionPieces(t testing.TB, re *regexp2.Regexp, text string) []string {
	t.Helper()
	runes := []rune(text)
	var pieces []string
	m, err := re.FindRunesMatch(runes)
	for ; m != nil && err == nil; m, err = re.FindNextMatch(m) {
		pieces = append(pieces, string(runes[m.Index:m.Index+m.Length]))
	}
	if err != nil {
		t.Fatal(err)
	}
	return pieces
}

// handPieces cuts text with nextPiece.
func handPieces(text string) []string {
	if !utf8.ValidString(text) {
		text = string([]rune(text))
	}
	var pieces []string
	for i := 0; i < len(text); {
		j := nextPiece(text, i)
		pieces = append(pieces, text[i:j])
		i = j
	}
	return pieces
}

func compilePattern(t testing.TB) *regexp2.Regexp {
	t.Helper()
	re, err := regexp2.Compile(cl100kPattern, regexp2.None)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

func samePieces(t testing.TB, re *regexp2.Regexp, text string) {
	t.Helper()
	want, got := expressionPieces(t, re, text), handPieces(text)
	if strings.Join(want, "\x00|") != strings.Join(got, "\x00|") {
		t.Fatalf("pieces of %q:\n hand       %q\n expression %q", text, got, want)
	}
}

// nextPiece cuts the test texts as the expression does.
func TestPiecesMatchExpression(t *testing.T) {
	re := compilePattern(t)
	for _, tc := range countCases {
		t.Run(tc.name, func(t *testing.T) { samePieces(t, re, tc.text) })
	}
}

// Every character is in the class the expression sees it in, and starts
// or continues a contraction as (?i:...) matches it: regexp2's own classes
// and case folding, one character at a time.
func TestClassesMatchExpressionForEveryCharacter(t *testing.T) {
	class := regexp2.MustCompile(`\A(?:([\r\n])|(\s)|(\p{L})|(\p{N})|([\s\S]))`, regexp2.None)
	contractions := regexp2.MustCompile(`\A(?i:'s|'t|'re|'ve|'m|'ll|'d)`, regexp2.None)
	groupClass := []uint8{1: clNewline, 2: clSpace, 3: clLetter, 4: clNumber, 5: clOther}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		m, err := class.FindRunesMatch([]rune{r})
		if err != nil || m == nil {
			t.Fatalf("U+%04X: no class (%v)", r, err)
		}
		for g := 1; g < len(groupClass); g++ {
			if m.GroupByNumber(g).Length > 0 {
				if got, _ := classAt(string(r), 0); got != groupClass[g] {
					t.Fatalf("U+%04X: class %d, the expression's %d", r, got, groupClass[g])
				}
				break
			}
		}
		if r >= 0x80 && !foldsToContractionLetter(r) {
			continue // no case of it is one of the contractions' letters
		}
		for _, after := range []string{"", "e", "l"} {
			text := "'" + string(r) + after
			want := 0
			if m, err := contractions.FindStringMatch(text); err != nil {
				t.Fatal(err)
			} else if m != nil {
				want = len(string([]rune(text)[1:m.Length]))
			}
			if got := contraction(text[1:]); got != want {
				t.Fatalf("contraction in %q: %d bytes, the expression's %d", text, got, want)
			}
		}
	}
}

func foldsToContractionLetter(r rune) bool {
	for f := unicode.SimpleFold(r); ; f = unicode.SimpleFold(f) {
		if strings.ContainsRune("strvlmde", unicode.ToLower(f)) {
			return true
		}
		if f == r {
			return false
		}
	}
}

// Characters in contexts that try each alternative around them: as the
// optional character before letters, inside and after a contraction,
// among numbers, after a space before punctuation, in whitespace runs
// before a newline and before a letter. Every character below U+3100
// (Latin, Greek, Cyrillic, the scripts with their own digits, combining
// marks, the Unicode spaces) and a sample of the rest.
func TestPiecesMatchExpressionAroundCharacters(t *testing.T) {
	re := compilePattern(t)
	var b strings.Builder
	flush := func() {
		samePieces(t, re, b.String())
		b.Reset()
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) || (r >= 0x3100 && r%61 != 0 && r != 0xfeff && r != 0x3000) {
			continue
		}
		c := string(r)
		for _, s := range []string{c, "a", "'", c, "e1", c, "22", c, "'l", c, " ", c, "!", " ", c, c, "\n", c, " ", c, "x'", c, "E"} {
			b.WriteString(s)
		}
		if b.Len() > 4096 {
			flush()
		}
	}
	flush()
}
