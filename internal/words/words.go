package words

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lower returns the runs of letters and digits of s, lower-cased, in
// order: exactly strings.FieldsFunc(strings.ToLower(s), notWord). ASCII
// text is split byte by byte, lower-cased once when it holds an upper-case
// letter, and its words are substrings of that; other text takes the
// general path, since lower-casing some characters changes what is a
// letter (U+0130 lower-cases to an i and a combining dot).
func Lower(s string) []string {
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return strings.FieldsFunc(strings.ToLower(s), notWord)
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if upper {
		s = strings.ToLower(s)
	}
	n, in := 0, false
	for i := 0; i < len(s); i++ {
		w := asciiWord[s[i]]
		if w && !in {
			n++
		}
		in = w
	}
	out := make([]string, 0, n)
	start := -1
	for i := 0; i < len(s); i++ {
		switch w := asciiWord[s[i]]; {
		case w && start < 0:
			start = i
		case !w && start >= 0:
			out = append(out, s[start:i])
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// notWord says whether r separates words: it is neither a letter nor a
// digit.
func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// asciiWord marks the bytes of ASCII letters and digits.
var asciiWord = func() (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = !notWord(rune(c))
	}
	return t
}()
