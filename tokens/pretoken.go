package tokens

import (
	"unicode"
	"unicode/utf8"
)

// cl100kPattern is cl100k_base's pre-tokenizer expression, as tiktoken-go
// matches it (with github.com/dlclark/regexp2): the text is cut into the
// pieces it matches, left to right, and each piece is encoded on its own.
// nextPiece reproduces it by hand; the tests hold the two equal piece by
// piece.
const cl100kPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Character classes as the expression sees them. regexp2 reads \s as
// unicode.IsSpace, \p{L} as unicode.L and \p{N} as unicode.N; every
// character is in exactly one of these classes, so every position starts
// a piece of one of the alternatives and the pieces cover the text.
const (
	clOther   uint8 = iota // [^\s\p{L}\p{N}]
	clLetter               // \p{L}
	clNumber               // \p{N}
	clSpace                // \s but not \r or \n
	clNewline              // \r or \n
)

// asciiClass is the class of each ASCII byte; it is never written.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for b := range utf8.RuneSelf {
		t[b] = classOf(rune(b))
	}
	return t
}()

func classOf(r rune) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return clNewline
	case unicode.IsSpace(r):
		return clSpace
	case unicode.IsLetter(r):
		return clLetter
	case unicode.IsNumber(r):
		return clNumber
	}
	return clOther
}

// classAt returns the class and width of the character at s[i]; s is
// valid UTF-8.
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return classOf(r), w
}

// nextPiece returns the end of the piece that starts at s[i], i <
// len(s), s valid UTF-8: the first alternative of cl100kPattern that
// matches there, with regexp2's greedy matching and backtracking.
func nextPiece(s string, i int) int {
	if s[i] == '\'' {
		if n := contraction(s[i+1:]); n > 0 {
			return i + 1 + n
		}
	}
	cls, w := classAt(s, i)
	switch cls {
	case clLetter: // [^\r\n\p{L}\p{N}]?\p{L}+ without the optional character
		return letters(s, i+w)
	case clNumber: // \p{N}{1,3}
		j := i + w
		for range 2 {
			if j >= len(s) {
				break
			}
			c, w := classAt(s, j)
			if c != clNumber {
				break
			}
			j += w
		}
		return j
	case clOther, clSpace:
		// [^\r\n\p{L}\p{N}]?\p{L}+ with the optional character.
		if j := i + w; j < len(s) {
			if c, w := classAt(s, j); c == clLetter {
				return letters(s, j+w)
			}
		}
		// ` ?[^\s\p{L}\p{N}]+[\r\n]*`: the space is taken when a
		// character of the run follows it; a run of others starts here.
		j := i
		if s[i] == ' ' {
			j = i + 1
		}
		if j < len(s) {
			if c, _ := classAt(s, j); c == clOther {
				for j < len(s) {
					c, w := classAt(s, j)
					if c != clOther {
						break
					}
					j += w
				}
				for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
					j++
				}
				return j
			}
		}
	}
	// Whitespace (the other classes returned above): the run of \s from
	// i, the end of its last newline, and the start of its last
	// character.
	end, afterNewline, last := i, -1, i
	for end < len(s) {
		c, w := classAt(s, end)
		if c != clSpace && c != clNewline {
			break
		}
		if c == clNewline {
			afterNewline = end + w
		}
		last = end
		end += w
	}
	switch {
	case afterNewline >= 0: // \s*[\r\n]+: \s* gives back up to the last newline
		return afterNewline
	case end == len(s) || last == i: // \s+(?!\S) at the end of the text, or \s+ of one character
		return end
	default: // \s+(?!\S) gives back the run's last character, which the next piece starts with
		return last
	}
}

// letters returns the end of the run of \p{L} from s[j].
func letters(s string, j int) int {
	for j < len(s) && s[j] < utf8.RuneSelf && asciiClass[s[j]] == clLetter {
		j++
	}
	for j < len(s) {
		c, w := classAt(s, j)
		if c != clLetter {
			break
		}
		j += w
	}
	return j
}

// contraction returns the length of the suffix of (?i:'s|'t|'re|'ve|'m|'ll|'d)
// that s starts with (after the apostrophe), or 0. regexp2 ignores case
// by comparing unicode.ToLower of the text's character with the pattern's.
func contraction(s string) int {
	r, w := lowerAt(s, 0)
	switch r {
	case 's', 't', 'm', 'd':
		return w
	case 'r', 'v', 'l':
		want := rune('e')
		if r == 'l' {
			want = 'l'
		}
		if r2, w2 := lowerAt(s, w); r2 == want {
			return w + w2
		}
	}
	return 0
}

func lowerAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return utf8.RuneError, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		return rune(c), 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	return unicode.ToLower(r), w
}
