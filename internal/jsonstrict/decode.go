package jsonstrict

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/h4r/h4r"
)

// maxDepth is encoding/json's nesting limit: deeper documents are refused
// here with a path instead of there without one (and the walk's recursion
// stays bounded).
const maxDepth = 10000

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	rawMessageType      = reflect.TypeFor[json.RawMessage]()
	timeType            = reflect.TypeFor[time.Time]()
)

// Decode decodes exactly one JSON value from data into v, which must be a
// non-nil pointer. It refuses, naming the value by its JSON path prefixed by
// field: malformed JSON and trailing data; an object key that is not exactly
// the JSON name of a field; a key repeated in any object; invalid UTF-8 and
// lone UTF-16 surrogate escapes in any string or key; a value of the wrong
// kind, or a number out of the field's range; null as an element of a list,
// a map value or the whole document where encoding/json would silently keep
// a zero value; more elements than a fixed-size array holds. Errors for bad
// input are *h4r.Error with code h4r.EINVALID; a v that is not a non-nil
// pointer is a programming error, reported as h4r.EINTERNAL.
func Decode(data []byte, v any, field string) error {
	return new(Decoder).Decode(data, v, field)
}

// A Decoder decodes as Decode does and keeps what it learned of each Go
// struct type's JSON members, for a caller that decodes many documents of
// the same types (a server's request bodies): for a small body, working
// them out by reflection is more than half of a fresh Decode. It is safe
// for concurrent use; its zero value is ready.
type Decoder struct {
	structs sync.Map // reflect.Type → *structInfo, never changed once stored
}

// fields returns the JSON members of struct type t.
func (d *Decoder) fields(t reflect.Type) *structInfo {
	if info, ok := d.structs.Load(t); ok {
		return info.(*structInfo)
	}
	info, _ := d.structs.LoadOrStore(t, structFields(t))
	return info.(*structInfo)
}

// Decode is the package's Decode, with the members of the struct types it
// meets kept for the next call.
func (d *Decoder) Decode(data []byte, v any, field string) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return h4r.Errorf(h4r.EINTERNAL, field, "jsonstrict.Decode needs a non-nil pointer, got %T", v)
	}
	t := rv.Type().Elem()
	if err := d.check(data, t, field, false); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// After the walk, only a type's own UnmarshalJSON or UnmarshalText
		// can refuse; walk again calling them, to name the value.
		if err := d.check(data, t, field, true); err != nil {
			return err
		}
		// A gap in the walk (FuzzDecode looks for them): still an input
		// error, at the caller's field.
		var own *h4r.Error
		if errors.As(err, &own) {
			return &h4r.Error{Code: h4r.EINVALID, Field: field, Message: own.Error()}
		}
		return h4r.Errorf(h4r.EINVALID, field, "invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// check walks data as one JSON value of type t and returns the first
// refusal, or nil if encoding/json may decode it. Types' own UnmarshalJSON
// and UnmarshalText run only when own is set: encoding/json runs them
// anyway, and h4r.Metadata's is the slowest part of decoding an item.
func (d *Decoder) check(data []byte, t reflect.Type, field string, own bool) error {
	w := &walker{data: data, dec: json.NewDecoder(bytes.NewReader(data)), field: field, own: own, structs: d}
	w.dec.UseNumber()
	tok, start, err := w.next()
	if errors.Is(err, io.EOF) {
		return w.refuse("empty input: want %s", describe(t))
	}
	if err != nil {
		return w.syntax(err)
	}
	if tok == nil && !nullable(t) {
		return w.refuse("want %s, got null", describe(t))
	}
	if err := w.value(tok, start, t, 0); err != nil {
		return err
	}
	if _, at, err := w.next(); !errors.Is(err, io.EOF) {
		line, col := position(w.data, at)
		return w.refuse("unexpected data after the JSON value at line %d, column %d: send exactly one JSON value", line, col)
	}
	return nil
}

type walker struct {
	data    []byte
	dec     *json.Decoder
	field   string
	own     bool      // run types' own decoders
	stack   []segment // where the walk is, below field
	structs *Decoder  // the members of struct types, as its caller keeps them
}

// segment is one step of the path: an object member or a list element. The
// path string is built only for an error: building it at every level would
// cost time and, for deep documents, memory quadratic in the depth.
type segment struct {
	key   string
	index int // -1 for a member
}

func (w *walker) push(key string, i int) { w.stack = append(w.stack, segment{key: key, index: i}) }
func (w *walker) pop()                   { w.stack = w.stack[:len(w.stack)-1] }

// path returns the JSON path of the current value.
func (w *walker) path() string {
	var b strings.Builder
	b.WriteString(w.field)
	for _, s := range w.stack {
		if s.index < 0 {
			b.WriteString(member(b.Len() == 0, s.key))
		} else {
			b.WriteString(index(s.index))
		}
	}
	return b.String()
}

// refuse returns the refusal of the current value.
func (w *walker) refuse(format string, args ...any) error {
	return h4r.Errorf(h4r.EINVALID, w.path(), format, args...)
}

// next reads one token and returns the offset of its first byte; on an
// error, the offset is where the token that failed begins.
func (w *walker) next() (json.Token, int, error) {
	start := w.offset()
	tok, err := w.dec.Token()
	// Token consumes the white space, ':' and ',' before a token.
	for start < len(w.data) && strings.IndexByte(" \t\r\n,:", w.data[start]) >= 0 {
		start++
	}
	if err != nil {
		return nil, start, &tokenError{err: err, offset: start}
	}
	return tok, start, nil
}

// tokenError is a decoder error with the offset of the token that failed:
// a SyntaxError's own offset is relative to where the decoder resumed.
type tokenError struct {
	err    error
	offset int
}

func (e *tokenError) Error() string { return e.err.Error() }
func (e *tokenError) Unwrap() error { return e.err }

func (w *walker) offset() int { return int(w.dec.InputOffset()) }

// syntax turns an error of next into a refusal of the current value.
func (w *walker) syntax(err error) error {
	var (
		te *tokenError
		se *json.SyntaxError
	)
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return w.refuse("malformed JSON: the input ends inside a value")
	case errors.As(err, &te) && errors.As(err, &se):
		line, col := position(w.data, te.offset)
		return w.refuse("malformed JSON at line %d, column %d: %s", line, col, se.Error())
	}
	return w.refuse("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// position returns the 1-based line and column (in bytes) of offset.
func position(data []byte, offset int) (line, col int) {
	offset = min(offset, len(data))
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte("\n"))
	return line, offset - bytes.LastIndexByte(before, '\n')
}

// value checks the value that starts with tok (at byte start) against t.
// depth counts the arrays and objects around it.
func (w *walker) value(tok json.Token, start int, t reflect.Type, depth int) error {
	if t.Kind() == reflect.Interface && t.NumMethod() == 0 {
		return w.any(tok, start, depth, true)
	}
	if t.Kind() == reflect.Pointer {
		if tok == nil {
			return nil
		}
		return w.value(tok, start, t.Elem(), depth)
	}
	if t == rawMessageType {
		// Kept raw for a second, strict decode by the caller; refuse here
		// what no decode may accept (duplicates, invalid UTF-8), with the
		// path.
		return w.any(tok, start, depth, false)
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := w.any(tok, start, depth, false); err != nil || !w.own {
			return err
		}
		u := reflect.New(t).Interface().(json.Unmarshaler)
		if err := u.UnmarshalJSON(w.data[start:w.offset()]); err != nil {
			return w.ownError(err, t)
		}
		return nil
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) {
		switch s := tok.(type) {
		case nil:
			return nil
		case string:
			if err := w.checkString(start); err != nil || !w.own {
				return err
			}
			u := reflect.New(t).Interface().(encoding.TextUnmarshaler)
			if err := u.UnmarshalText([]byte(s)); err != nil {
				return w.ownError(err, t)
			}
			return nil
		}
		return w.mismatch(t, tok)
	}
	switch t.Kind() {
	case reflect.Struct:
		switch tok {
		case nil:
			return nil
		case json.Delim('{'):
			return w.object(t, depth+1)
		}
	case reflect.Map:
		switch tok {
		case nil:
			return nil
		case json.Delim('{'):
			return w.mapping(t, depth+1)
		}
	case reflect.Slice, reflect.Array:
		switch tok {
		case nil:
			return nil
		case json.Delim('['):
			return w.list(t, depth+1)
		}
		if s, ok := tok.(string); ok && t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return w.refuse("want base64 (standard alphabet, padded) bytes: %v", err)
			}
			return w.checkString(start)
		}
	case reflect.String:
		switch tok.(type) {
		case nil:
			return nil
		case string:
			return w.checkString(start)
		}
	case reflect.Bool:
		switch tok.(type) {
		case nil, bool:
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		switch n := tok.(type) {
		case nil:
			return nil
		case json.Number:
			if problem := number(t, string(n)); problem != "" {
				return w.refuse("%s", problem)
			}
			return nil
		}
	default:
		return w.refuse("cannot decode JSON into Go type %s", t)
	}
	return w.mismatch(t, tok)
}

// number says what is wrong with number n for type t, or "" if
// encoding/json converts it.
func number(t reflect.Type, n string) string {
	z := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(n, 10, 64)
		if err == nil && !z.OverflowInt(i) {
			return ""
		}
		if strings.ContainsAny(n, ".eE") {
			return fmt.Sprintf("want an integer, got %s", n)
		}
		return fmt.Sprintf("want an integer between %d and %d, got %s", minInt(t), maxInt(t), n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u, err := strconv.ParseUint(n, 10, 64)
		if err == nil && !z.OverflowUint(u) {
			return ""
		}
		if strings.ContainsAny(n, ".eE") {
			return fmt.Sprintf("want a whole number >= 0, got %s", n)
		}
		return fmt.Sprintf("want a whole number between 0 and %d, got %s", uint64(1)<<t.Bits()-1, n)
	}
	f, err := strconv.ParseFloat(n, t.Bits())
	if err != nil || z.OverflowFloat(f) {
		return fmt.Sprintf("number %s is out of range for a %d-bit float", n, t.Bits())
	}
	return ""
}

func minInt(t reflect.Type) int64 { return -1 << (t.Bits() - 1) }
func maxInt(t reflect.Type) int64 { return 1<<(t.Bits()-1) - 1 }

// deeper refuses a value nested past maxDepth.
func (w *walker) deeper(depth int) error {
	if depth > maxDepth {
		return w.refuse("JSON nests more than %d levels deep", maxDepth)
	}
	return nil
}

// object checks the members of a JSON object decoded into struct t; the
// '{' has been read.
func (w *walker) object(t reflect.Type, depth int) error {
	if err := w.deeper(depth); err != nil {
		return err
	}
	info := w.structs.fields(t)
	var seen map[string]bool
	for {
		key, ok, err := w.key(&seen)
		if err != nil || !ok {
			return err
		}
		w.push(key, -1)
		f := info.byName[key]
		if f == nil {
			return w.unknown(info, key)
		}
		tok, start, err := w.next()
		if err != nil {
			return w.syntax(err)
		}
		if f.quoted {
			// ",string" fields are left to encoding/json, which checks
			// them; the walk still refuses duplicates and bad UTF-8.
			err = w.any(tok, start, depth, false)
		} else {
			err = w.value(tok, start, f.typ, depth)
		}
		if err != nil {
			return err
		}
		w.pop()
	}
}

// key reads the next key of the current object, refusing invalid UTF-8 and
// a repeated key; ok is false at the closing '}'.
func (w *walker) key(seen *map[string]bool) (string, bool, error) {
	tok, start, err := w.next()
	if err != nil {
		return "", false, w.syntax(err)
	}
	key, isKey := tok.(string)
	if !isKey {
		return "", false, nil // the decoder allows only '}' here
	}
	raw := w.data[start:w.offset()]
	if problem := badString(raw); problem != "" {
		return "", false, w.refuse("object key %q %s", raw[1:len(raw)-1], problem)
	}
	if *seen == nil {
		*seen = map[string]bool{}
	}
	if (*seen)[key] {
		w.push(key, -1)
		return "", false, w.refuse("duplicate key %q: each key may appear once in an object", key)
	}
	(*seen)[key] = true
	return key, true, nil
}

// unknown refuses key, which struct info has no member for.
func (w *walker) unknown(info *structInfo, key string) error {
	for _, name := range info.names {
		if strings.EqualFold(name, key) {
			return w.refuse("unknown field %q (did you mean %q?): field names are case-sensitive", key, name)
		}
	}
	if len(info.names) == 0 {
		return w.refuse("unknown field %q: want an empty object", key)
	}
	return w.refuse("unknown field %q (want one of %s)", key, quoteAll(info.names))
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// mapping checks the members of a JSON object decoded into map type t.
func (w *walker) mapping(t reflect.Type, depth int) error {
	if err := w.deeper(depth); err != nil {
		return err
	}
	kt, et := t.Key(), t.Elem()
	var seen map[string]bool
	var seenInts map[string]bool // integer keys: "1" and "01" are the same key
	for {
		key, ok, err := w.key(&seen)
		if err != nil || !ok {
			return err
		}
		w.push(key, -1)
		switch {
		case reflect.PointerTo(kt).Implements(textUnmarshalerType):
			if !w.own {
				break
			}
			if err := reflect.New(kt).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(key)); err != nil {
				return w.ownError(err, kt)
			}
		case kt.Kind() == reflect.String:
		case kt.Kind() >= reflect.Int && kt.Kind() <= reflect.Uintptr:
			if problem := number(kt, key); problem != "" {
				return w.refuse("key %q: %s", key, problem)
			}
			canonical := key
			if i, err := strconv.ParseInt(key, 10, 64); err == nil {
				canonical = strconv.FormatInt(i, 10)
			} else if u, err := strconv.ParseUint(key, 10, 64); err == nil {
				canonical = strconv.FormatUint(u, 10)
			}
			if seenInts == nil {
				seenInts = map[string]bool{}
			}
			if seenInts[canonical] {
				return w.refuse("duplicate key %q: the number %s is already a key of this object", key, canonical)
			}
			seenInts[canonical] = true
		default:
			w.pop()
			return w.refuse("cannot decode a JSON object into Go type %s", t)
		}
		tok, start, err := w.next()
		if err != nil {
			return w.syntax(err)
		}
		if tok == nil && !nullable(et) {
			return w.refuse("want %s, got null", describe(et))
		}
		if err := w.value(tok, start, et, depth); err != nil {
			return err
		}
		w.pop()
	}
}

// list checks the elements of a JSON array decoded into slice or array t.
func (w *walker) list(t reflect.Type, depth int) error {
	if err := w.deeper(depth); err != nil {
		return err
	}
	et := t.Elem()
	for i := 0; ; i++ {
		w.push("", i)
		tok, start, err := w.next()
		if err != nil {
			return w.syntax(err)
		}
		if tok == json.Delim(']') {
			w.pop()
			return nil
		}
		if t.Kind() == reflect.Array && i >= t.Len() {
			return w.refuse("too many elements: want at most %d", t.Len())
		}
		if tok == nil && !nullable(et) {
			return w.refuse("want %s, got null", describe(et))
		}
		if err := w.value(tok, start, et, depth); err != nil {
			return err
		}
		w.pop()
	}
}

// any checks a value of any shape: syntax, keys, strings and, when numbers
// is set (the value becomes an interface{}, so a float64), number range.
func (w *walker) any(tok json.Token, start int, depth int, numbers bool) error {
	switch x := tok.(type) {
	case string:
		return w.checkString(start)
	case json.Number:
		if !numbers {
			return nil
		}
		if _, err := strconv.ParseFloat(string(x), 64); err != nil {
			return w.refuse("number %s is out of range for a 64-bit float", x)
		}
		return nil
	case json.Delim:
		depth++
		if err := w.deeper(depth); err != nil {
			return err
		}
		if x == '[' {
			for i := 0; ; i++ {
				w.push("", i)
				tok, start, err := w.next()
				if err != nil {
					return w.syntax(err)
				}
				if tok == json.Delim(']') {
					w.pop()
					return nil
				}
				if err := w.any(tok, start, depth, numbers); err != nil {
					return err
				}
				w.pop()
			}
		}
		var seen map[string]bool
		for {
			key, ok, err := w.key(&seen)
			if err != nil || !ok {
				return err
			}
			w.push(key, -1)
			tok, start, err := w.next()
			if err != nil {
				return w.syntax(err)
			}
			if err := w.any(tok, start, depth, numbers); err != nil {
				return err
			}
			w.pop()
		}
	}
	return nil // null, true, false
}

// checkString refuses the string token that starts at start (and ends at
// the decoder's offset) if it is not valid UTF-8 or holds a lone surrogate.
func (w *walker) checkString(start int) error {
	if problem := badString(w.data[start:w.offset()]); problem != "" {
		return w.refuse("string %s", problem)
	}
	return nil
}

// badString says what is wrong with the raw JSON string literal raw (with
// its quotes), or "" if it decodes to what it says. encoding/json would
// silently turn an invalid byte or a lone surrogate into U+FFFD.
func badString(raw []byte) string {
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return ""
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if s[i+1] != 'u' {
				i += 2
				continue
			}
			r := hex4(s[i+2 : i+6])
			switch {
			case 0xD800 <= r && r < 0xDC00:
				if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
					if lo := hex4(s[i+8 : i+12]); 0xDC00 <= lo && lo < 0xE000 {
						i += 12
						continue
					}
				}
				return fmt.Sprintf("holds a lone UTF-16 surrogate \\u%04x at byte %d: a character outside the Basic Multilingual Plane is a pair of escapes (high \\ud800-\\udbff, then low \\udc00-\\udfff)", r, i)
			case 0xDC00 <= r && r < 0xE000:
				return fmt.Sprintf("holds a lone UTF-16 surrogate \\u%04x at byte %d: a low surrogate must follow a high one", r, i)
			}
			i += 6
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				return fmt.Sprintf("is not valid UTF-8 (byte 0x%02x at byte %d of the string): JSON text must be UTF-8", c, i)
			}
			i += size
		}
	}
	return ""
}

// hex4 decodes four hex digits; the decoder has checked them.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// ownError turns the error of t's own UnmarshalJSON or UnmarshalText into
// a refusal of the current value: an *h4r.Error names the offending part
// relative to the value.
func (w *walker) ownError(err error, t reflect.Type) error {
	var herr *h4r.Error
	if errors.As(err, &herr) {
		return &h4r.Error{Code: h4r.EINVALID, Field: join(w.path(), herr.Field), Message: herr.Message}
	}
	return w.refuse("want %s: %s", describe(t), strings.TrimPrefix(err.Error(), "json: "))
}

// nullable reports whether null decodes into t as a value of its own (nil,
// or what t's UnmarshalJSON makes of it); for other types encoding/json
// ignores null and keeps a zero value, which Decode refuses in lists, map
// values and at the top.
func nullable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return true
	}
	return reflect.PointerTo(t).Implements(unmarshalerType)
}

// mismatch refuses tok where a value of type t belongs.
func (w *walker) mismatch(t reflect.Type, tok json.Token) error {
	return w.refuse("want %s, got %s", describe(t), gotten(tok))
}

// gotten describes a JSON token in a message.
func gotten(tok json.Token) string {
	const maxShown = 40
	switch x := tok.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		if len(x) > maxShown {
			return "a number"
		}
		return "the number " + string(x)
	case string:
		if len(x) > maxShown {
			return "a string"
		}
		return "the string " + strconv.Quote(x)
	case json.Delim:
		if x == '[' {
			return "a list"
		}
		return "an object"
	}
	return "a value"
}

// describe names a Go type the way a JSON client thinks of it.
func describe(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return `an RFC 3339 timestamp string such as "2026-11-20T10:00:00Z"`
	case reflect.PointerTo(t).Implements(unmarshalerType):
		return "a valid " + t.Name()
	case reflect.PointerTo(t).Implements(textUnmarshalerType):
		return "a string"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		switch t.Elem().Kind() {
		case reflect.String:
			return "a list of strings"
		case reflect.Float32, reflect.Float64:
			return "a list of numbers"
		}
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value"
}
