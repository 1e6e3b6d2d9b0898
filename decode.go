package h4r

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// DecodeStrict decodes exactly one JSON value from data into v, rejecting
// unknown fields and trailing data. Errors are invalid_argument and name the
// offending field, prefixed by field when it is not empty.
func DecodeStrict(data []byte, v any, field string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, field)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Errorf(EINVALID, field, "unexpected data after the JSON value")
	}
	return nil
}

// jsonError turns an encoding/json error into an *Error naming the field.
func jsonError(err error, field string) error {
	join := func(name string) string {
		switch {
		case field == "":
			return name
		case name == "":
			return field
		}
		return field + "." + name
	}
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		own    *Error
	)
	switch {
	case errors.As(err, &own):
		if own.Field == "" || !strings.HasPrefix(own.Field, field) {
			return &Error{Code: own.Code, Message: own.Message, Field: join(own.Field)}
		}
		return own
	case errors.As(err, &syntax):
		return Errorf(EINVALID, field, "malformed JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typ):
		return Errorf(EINVALID, join(typ.Field), "expected %s, got JSON %s", typ.Type, typ.Value)
	case errors.Is(err, io.EOF):
		return Errorf(EINVALID, field, "empty body: expected a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(EINVALID, field, "malformed JSON: unexpected end of input")
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, `json: unknown field "`); ok {
		name = strings.TrimSuffix(name, `"`)
		return Errorf(EINVALID, join(name), "unknown field %q", name)
	}
	return Errorf(EINVALID, field, "invalid JSON: %s", strings.TrimPrefix(msg, "json: "))
}
