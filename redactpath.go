package h4r

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on a redaction path, which comes from a policy or an item and so
// from outside.
const (
	MaxPathBytes = 1024
	MaxPathSteps = 32
)

// Roots a redaction path may start from.
const (
	RootText    = "text"
	RootContent = "content"
)

// RedactionPath is a parsed redaction path: a root (text or content) and
// the steps into content. It is the one grammar of a policy's
// redactedFields and an item's metadata.piiFields (which Item.Validate
// parses at ingest, so that a path the redactor cannot apply is refused
// there rather than failing every pack). The subset of JSONPath it accepts:
//
//	$.text                    the item's text
//	$.content                 the whole content
//	$.content.a.b             object members by name (letters, digits, _, -, $)
//	$.content['key with spaces'], $.content["k"]   quoted names (\' \" \\ escapes)
//	$.content.list[0], [-1]   list elements by index (negative counts from the end)
//	$.content.list[*].email, $.content.map.*       every element or member
//
// Filters, slices, unions and recursive descent (..) are not supported.
type RedactionPath struct {
	raw   string
	root  string
	steps []PathStep
}

// StepKind is what one step of a RedactionPath selects.
type StepKind uint8

// Step kinds.
const (
	StepName     StepKind = iota // an object member by name
	StepIndex                    // a list element by index
	StepWildcard                 // every element or member
)

// PathStep is one step of a RedactionPath into content.
type PathStep struct {
	Kind  StepKind
	Name  string // StepName
	Index int    // StepIndex; negative counts from the end
}

// String returns the path as it was written.
func (p RedactionPath) String() string { return p.raw }

// Root returns "text" or "content".
func (p RedactionPath) Root() string { return p.root }

// Steps returns the steps into content (none for $.text and $.content).
// The slice is the path's own: read-only.
func (p RedactionPath) Steps() []PathStep { return p.steps }

// ParseRedactionPath parses a redaction path. An invalid path is an
// invalid_argument error (field "path") saying what is wrong and where.
func ParseRedactionPath(p string) (RedactionPath, error) {
	if len(p) > MaxPathBytes {
		return RedactionPath{}, pathError(p, "is longer than %d bytes", MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return RedactionPath{}, pathError(p, "is not valid UTF-8")
	}
	if !strings.HasPrefix(p, "$") {
		return RedactionPath{}, pathError(p, "must start with $")
	}
	var steps []PathStep
	for rest := p[1:]; rest != ""; {
		if len(steps) == MaxPathSteps {
			return RedactionPath{}, pathError(p, "has more than %d steps", MaxPathSteps)
		}
		s, n, err := parseStep(rest)
		if err != nil {
			return RedactionPath{}, pathError(p, "at offset %d: %s", len(p)-len(rest), err)
		}
		steps = append(steps, s)
		rest = rest[n:]
	}
	if len(steps) == 0 {
		return RedactionPath{}, pathError(p, "names no field (want $.text or $.content…)")
	}
	root := steps[0]
	if root.Kind != StepName || (root.Name != RootText && root.Name != RootContent) {
		return RedactionPath{}, pathError(p, "must start with $.text or $.content")
	}
	if root.Name == RootText && len(steps) > 1 {
		return RedactionPath{}, pathError(p, "text is a string: a path cannot go into it")
	}
	p2 := RedactionPath{raw: p, root: root.Name}
	if len(steps) > 1 {
		p2.steps = steps[1:]
	}
	return p2, nil
}

func pathError(p, format string, args ...any) error {
	return Errorf(EINVALID, "path", "redaction path %q %s", p, fmt.Sprintf(format, args...))
}

// stepError is a parse failure inside one step; ParsePath adds the offset.
type stepError string

func (e stepError) Error() string { return string(e) }

// parseStep reads one step from the start of s and returns it with the
// number of bytes it took.
func parseStep(s string) (PathStep, int, error) {
	switch s[0] {
	case '.':
		if len(s) > 1 && s[1] == '.' {
			return PathStep{}, 0, stepError("recursive descent (..) is not supported")
		}
		if len(s) > 1 && s[1] == '*' {
			return PathStep{Kind: StepWildcard}, 2, nil
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
			return PathStep{}, 0, stepError("expected a name after '.' (use ['…'] for other characters)")
		}
		return PathStep{Kind: StepName, Name: s[1:n]}, n, nil
	case '[':
		return parseBracket(s)
	}
	return PathStep{}, 0, stepError("expected '.' or '['")
}

func isNameRune(r rune) bool {
	return r == '_' || r == '-' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// parseBracket reads [*], [index], ['name'] or ["name"].
func parseBracket(s string) (PathStep, int, error) {
	if len(s) < 2 {
		return PathStep{}, 0, stepError("unterminated '['")
	}
	switch c := s[1]; {
	case c == '*':
		if len(s) < 3 || s[2] != ']' {
			return PathStep{}, 0, stepError("expected ']' after '[*'")
		}
		return PathStep{Kind: StepWildcard}, 3, nil
	case c == '\'' || c == '"':
		var name strings.Builder
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				if i+1 == len(s) || (s[i+1] != '\\' && s[i+1] != '\'' && s[i+1] != '"') {
					return PathStep{}, 0, stepError(`only \\, \' and \" escapes are supported`)
				}
				i++
				name.WriteByte(s[i])
			case c:
				if i+1 == len(s) || s[i+1] != ']' {
					return PathStep{}, 0, stepError("expected ']' after the quoted name")
				}
				return PathStep{Kind: StepName, Name: name.String()}, i + 2, nil
			default:
				name.WriteByte(s[i])
			}
		}
		return PathStep{}, 0, stepError("unterminated quoted name")
	case c == '-' || (c >= '0' && c <= '9'):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return PathStep{}, 0, stepError("unterminated '['")
		}
		digits := s[1:end]
		magnitude := strings.TrimPrefix(digits, "-")
		if magnitude == "" || strings.Trim(magnitude, "0123456789") != "" ||
			(len(magnitude) > 1 && magnitude[0] == '0') || digits == "-0" {
			return PathStep{}, 0, stepError("index must be an integer such as 0, 3 or -1")
		}
		// At most 9 digits: no overflow, and no list is that long anyway.
		if len(magnitude) > 9 {
			return PathStep{}, 0, stepError("index is too large")
		}
		i, err := strconv.Atoi(digits)
		if err != nil {
			return PathStep{}, 0, stepError("index must be an integer such as 0, 3 or -1")
		}
		return PathStep{Kind: StepIndex, Index: i}, end + 1, nil
	}
	return PathStep{}, 0, stepError("expected *, an index or a quoted name after '['")
}

// caseMismatch reports a content path that names nothing in content but
// would if member names were compared without case, with the first name as
// written and the key content has. Such a piiFields path would silently
// redact nothing, so Item.Validate refuses it.
func (p RedactionPath) caseMismatch(content map[string]any) (written, actual string, found bool) {
	if p.root != RootContent || len(p.steps) == 0 || content == nil || names(content, p.steps) {
		return "", "", false
	}
	return foldNames(content, p.steps)
}

// names reports whether steps name at least one value under node, as the
// redactor walks them.
func names(node any, steps []PathStep) bool {
	if len(steps) == 0 {
		return true
	}
	s, rest := steps[0], steps[1:]
	switch c := node.(type) {
	case map[string]any:
		switch s.Kind {
		case StepName:
			v, ok := c[s.Name]
			return ok && names(v, rest)
		case StepWildcard:
			for _, v := range c {
				if names(v, rest) {
					return true
				}
			}
		}
	case []any:
		switch s.Kind {
		case StepIndex:
			i := s.Index
			if i < 0 {
				i += len(c)
			}
			return i >= 0 && i < len(c) && names(c[i], rest)
		case StepWildcard:
			for _, v := range c {
				if names(v, rest) {
					return true
				}
			}
		}
	}
	return false
}

// foldNames walks steps as names does, but lets a name match a key that
// differs only in case. It returns the outermost such name and key on the
// first walk that names a value; called only when names found none, so a
// walk that succeeds took at least one such key.
func foldNames(node any, steps []PathStep) (written, actual string, ok bool) {
	if len(steps) == 0 {
		return "", "", true
	}
	s, rest := steps[0], steps[1:]
	switch c := node.(type) {
	case map[string]any:
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		slices.Sort(keys) // the same answer on every run
		for _, k := range keys {
			exact := s.Kind == StepWildcard || k == s.Name
			if !exact && (s.Kind != StepName || !strings.EqualFold(k, s.Name)) {
				continue
			}
			if w, a, ok := foldNames(c[k], rest); ok {
				if !exact {
					return s.Name, k, true
				}
				return w, a, true
			}
		}
	case []any:
		for i, v := range c {
			if s.Kind == StepIndex && i != s.Index && i != s.Index+len(c) {
				continue
			}
			if s.Kind == StepName {
				break
			}
			if w, a, ok := foldNames(v, rest); ok {
				return w, a, true
			}
		}
	}
	return "", "", false
}
