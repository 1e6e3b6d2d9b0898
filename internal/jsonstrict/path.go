package jsonstrict

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// A path is the caller's field followed by segments: ".name" for an object
// member whose name is plain (letters, digits, '_' and '-'), `["a b"]` (a
// JSON string) for any other name, and "[3]" for a list element. With no
// caller's field, a path starts with the bare name or a bracket.

// member returns the segment for key in an object: ".key", or "key" at
// the start of a path, or `["k y"]` for a key that is no plain name.
func member(first bool, key string) string {
	if plainName(key) {
		if first {
			return key
		}
		return "." + key
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(key) // a string always encodes
	return "[" + strings.TrimSuffix(b.String(), "\n") + "]"
}

// index returns the segment for element i of a list.
func index(i int) string {
	return "[" + strconv.Itoa(i) + "]"
}

func plainName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// join appends rel, a path relative to the value at path as a type's own
// UnmarshalJSON reports it ("trust", "[0]", "tags[1]", ""), to path. A rel
// that is not path syntax (a type put a raw key in it) is dropped, so that
// every Field stays a path; the type's message still names the key.
func join(path, rel string) string {
	if rel == "" || !validRel(rel) {
		return path
	}
	if path == "" || rel[0] == '[' {
		return path + rel
	}
	return path + "." + rel
}

// validRel reports whether rel is a relative path: a plain name or a
// bracket, then any number of segments.
func validRel(rel string) bool {
	if rel == "" {
		return true
	}
	if rel[0] != '[' {
		n := nameLen(rel)
		if n == 0 {
			return false
		}
		rel = rel[n:]
	}
	return validSegments(rel)
}

// validSegments reports whether s is a sequence of ".name", "[digits]" and
// `["json string"]` segments.
func validSegments(s string) bool {
	for s != "" {
		switch s[0] {
		case '.':
			n := nameLen(s[1:])
			if n == 0 {
				return false
			}
			s = s[1+n:]
		case '[':
			rest, ok := bracket(s)
			if !ok {
				return false
			}
			s = rest
		default:
			return false
		}
	}
	return true
}

func nameLen(s string) int {
	n := 0
	for n < len(s) && plainName(s[n:n+1]) {
		n++
	}
	return n
}

// bracket consumes one "[digits]" or `["json string"]` segment.
func bracket(s string) (rest string, ok bool) {
	if len(s) < 3 || s[0] != '[' {
		return "", false
	}
	if s[1] == '"' {
		dec := json.NewDecoder(strings.NewReader(s[1:]))
		var key string
		if err := dec.Decode(&key); err != nil {
			return "", false
		}
		end := 1 + int(dec.InputOffset())
		if end >= len(s) || s[end] != ']' {
			return "", false
		}
		return s[end+1:], true
	}
	end := strings.IndexByte(s, ']')
	if end < 2 {
		return "", false
	}
	if _, err := strconv.Atoi(s[1:end]); err != nil || strings.ContainsAny(s[1:end], "+-") {
		return "", false
	}
	return s[end+1:], true
}
