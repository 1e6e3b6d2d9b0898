package scs

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/h4r/h4r"
)

// Limits on a redaction path, which comes from a policy and so from outside.
const (
	maxPathBytes = 1024
	maxPathSteps = 32
)

// Roots a redaction path may start from.
const (
	RootText    = "text"
	RootContent = "content"
)

// Path is a parsed redaction path: a root (text or content) and the steps
// into content. The subset of JSONPath it accepts:
//
//	$.text                    the item's text
//	$.content                 the whole content
//	$.content.a.b             object members by name (letters, digits, _, -, $)
//	$.content['key with spaces'], $.content["k"]   quoted names (\' \" \\ escapes)
//	$.content.list[0], [-1]   list elements by index (negative counts from the end)
//	$.content.list[*].email, $.content.map.*       every element or member
//
// Filters, slices, unions and recursive descent (..) are not supported.
type Path struct {
	raw   string
	root  string
	steps []step
}

type stepKind uint8

const (
	stepName stepKind = iota
	stepIndex
	stepWildcard
)

type step struct {
	kind  stepKind
	name  string
	index int
}

// String returns the path as it was written.
func (p Path) String() string { return p.raw }

// Root returns "text" or "content".
func (p Path) Root() string { return p.root }

// ParsePath parses a redaction path. An invalid path is an invalid_argument
// error (field "path") saying what is wrong and where.
func ParsePath(p string) (Path, error) {
	if len(p) > maxPathBytes {
		return Path{}, pathError(p, "is longer than %d bytes", maxPathBytes)
	}
	if !utf8.ValidString(p) {
		return Path{}, pathError(p, "is not valid UTF-8")
	}
	if !strings.HasPrefix(p, "$") {
		return Path{}, pathError(p, "must start with $")
	}
	var steps []step
	for rest := p[1:]; rest != ""; {
		if len(steps) == maxPathSteps {
			return Path{}, pathError(p, "has more than %d steps", maxPathSteps)
		}
		s, n, err := parseStep(rest)
		if err != nil {
			return Path{}, pathError(p, "at offset %d: %s", len(p)-len(rest), err)
		}
		steps = append(steps, s)
		rest = rest[n:]
	}
	if len(steps) == 0 {
		return Path{}, pathError(p, "names no field (want $.text or $.content…)")
	}
	root := steps[0]
	if root.kind != stepName || (root.name != RootText && root.name != RootContent) {
		return Path{}, pathError(p, "must start with $.text or $.content")
	}
	if root.name == RootText && len(steps) > 1 {
		return Path{}, pathError(p, "text is a string: a path cannot go into it")
	}
	p2 := Path{raw: p, root: root.name}
	if len(steps) > 1 {
		p2.steps = steps[1:]
	}
	return p2, nil
}

func pathError(p, format string, args ...any) error {
	return h4r.Errorf(h4r.EINVALID, "path", "redaction path %q %s", p, fmt.Sprintf(format, args...))
}

// stepError is a parse failure inside one step; ParsePath adds the offset.
type stepError string

func (e stepError) Error() string { return string(e) }

// parseStep reads one step from the start of s and returns it with the
// number of bytes it took.
func parseStep(s string) (step, int, error) {
	switch s[0] {
	case '.':
		if len(s) > 1 && s[1] == '.' {
			return step{}, 0, stepError("recursive descent (..) is not supported")
		}
		if len(s) > 1 && s[1] == '*' {
			return step{kind: stepWildcard}, 2, nil
		}
		n := 1
		for n < len(s) {
			r, size := utf8.DecodeRuneInString(s[n:])
			if !isNameRune(r) {
				break
			}
			n += size
		}
		if n == 1 {
			return step{}, 0, stepError("expected a name after '.' (use ['…'] for other characters)")
		}
		return step{kind: stepName, name: s[1:n]}, n, nil
	case '[':
		return parseBracket(s)
	}
	return step{}, 0, stepError("expected '.' or '['")
}

func isNameRune(r rune) bool {
	return r == '_' || r == '-' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// parseBracket reads [*], [index], ['name'] or ["name"].
func parseBracket(s string) (step, int, error) {
	if len(s) < 2 {
		return step{}, 0, stepError("unterminated '['")
	}
	switch c := s[1]; {
	case c == '*':
		if len(s) < 3 || s[2] != ']' {
			return step{}, 0, stepError("expected ']' after '[*'")
		}
		return step{kind: stepWildcard}, 3, nil
	case c == '\'' || c == '"':
		var name strings.Builder
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 == len(s) || (s[i+1] != '\\' && s[i+1] != '\'' && s[i+1] != '"') {
					return step{}, 0, stepError(`only \\, \' and \" escapes are supported`)
				}
				i++
				name.WriteByte(s[i])
			case c:
				if i+1 == len(s) || s[i+1] != ']' {
					return step{}, 0, stepError("expected ']' after the quoted name")
				}
				return step{kind: stepName, name: name.String()}, i + 2, nil
			default:
				name.WriteByte(s[i])
			}
		}
		return step{}, 0, stepError("unterminated quoted name")
	case c == '-' || (c >= '0' && c <= '9'):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return step{}, 0, stepError("unterminated '['")
		}
		digits := s[1:end]
		magnitude := strings.TrimPrefix(digits, "-")
		if magnitude == "" || strings.Trim(magnitude, "0123456789") != "" ||
			(len(magnitude) > 1 && magnitude[0] == '0') || digits == "-0" {
			return step{}, 0, stepError("index must be an integer such as 0, 3 or -1")
		}
		// At most 9 digits: no overflow, and no list is that long anyway.
		if len(magnitude) > 9 {
			return step{}, 0, stepError("index is too large")
		}
		i, err := strconv.Atoi(digits)
		if err != nil {
			return step{}, 0, stepError("index must be an integer such as 0, 3 or -1")
		}
		return step{kind: stepIndex, index: i}, end + 1, nil
	}
	return step{}, 0, stepError("expected *, an index or a quoted name after '['")
}
