package h4r

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
)

// DecodeStrict decodes exactly one JSON value from data into v, rejecting
// unknown fields and trailing data. Errors are invalid_argument and name the
// offending field by its JSON path ("payload.query.type",
// "items[0].links[1].weight"), prefixed by field when it is not empty.
func DecodeStrict(data []byte, v any, field string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, data, reflect.TypeOf(v), field)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(EINVALID, field, "unexpected data after the JSON value")
	}
	return nil
}

// jsonError turns an encoding/json error into an *Error naming the field.
func jsonError(err error, data []byte, t reflect.Type, field string) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		own    *Error
	)
	switch {
	case errors.As(err, &own):
		// A type's own UnmarshalJSON names the field relative to itself.
		if own.Field == "" || !strings.HasPrefix(own.Field, field) {
			return &Error{Code: own.Code, Message: own.Message, Field: joinField(field, own.Field)}
		}
		return own
	case errors.As(err, &syntax):
		return Errorf(EINVALID, field, "malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		return Errorf(EINVALID, joinField(field, jsonPath(typ.Field, t)), "expected %s, got JSON %s", describe(typ.Type), typ.Value)
	case errors.Is(err, io.EOF):
		return Errorf(EINVALID, field, "empty body: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(EINVALID, field, "malformed JSON: unexpected end of input")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		name = strings.TrimSuffix(name, `"`)
		path := name
		var doc any
		if json.Unmarshal(data, &doc) == nil {
			if p, found := unknownField(doc, t, name, ""); found {
				path = p
			}
		}
		return Errorf(EINVALID, joinField(field, path), "unknown field %q", name)
	}
	return Errorf(EINVALID, field, "invalid JSON: %s", strings.TrimPrefix(msg, "json: "))
}

func joinField(prefix, name string) string {
	switch {
	case prefix == "":
		return name
	case name == "":
		return prefix
	case strings.HasPrefix(name, "["):
		return prefix + name
	}
	return prefix + "." + name
}

// jsonPath drops from encoding/json's field path the Go names of embedded
// structs, which a client never wrote ("ContextRequest.limit" → "limit").
func jsonPath(path string, t reflect.Type) string {
	embedded := map[string]bool{}
	collectEmbedded(t, embedded, map[reflect.Type]bool{})
	parts := strings.Split(path, ".")
	parts = slices.DeleteFunc(parts, func(p string) bool { return embedded[p] })
	return strings.Join(parts, ".")
}

func collectEmbedded(t reflect.Type, names map[string]bool, seen map[reflect.Type]bool) {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" {
			names[f.Name] = true
		}
		collectEmbedded(f.Type, names, seen)
	}
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// unknownField finds the JSON path of the first key named name in doc that
// type t has no field for. encoding/json reports only the key, not where it
// was. Types with their own UnmarshalJSON are opaque to this walk.
func unknownField(doc any, t reflect.Type, name, path string) (string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "", false
	}
	switch x := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var ft reflect.Type
			switch t.Kind() {
			case reflect.Map:
				ft = t.Elem()
			case reflect.Struct:
				f, ok := structField(t, k)
				if !ok {
					if k == name {
						return joinField(path, k), true
					}
					continue
				}
				ft = f
			default:
				return "", false
			}
			if p, ok := unknownField(x[k], ft, name, joinField(path, k)); ok {
				return p, true
			}
		}
	case []any:
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			return "", false
		}
		for i, e := range x {
			if p, ok := unknownField(e, t.Elem(), name, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// structField returns the type of the field that JSON key k decodes into,
// following embedded structs and matching names case-insensitively, as
// encoding/json does.
func structField(t reflect.Type, k string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := structField(et, k); ok {
					return ft, true
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		jsonName := tag
		if jsonName == "" {
			jsonName = f.Name
		}
		if strings.EqualFold(jsonName, k) {
			return f.Type, true
		}
	}
	return nil, false
}

// describe names a Go type the way a JSON client thinks of it.
func describe(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value"
}
