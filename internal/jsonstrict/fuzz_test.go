package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/h4r/h4r"
)

// FuzzDecode decodes arbitrary input into several target types and checks
// that Decode never panics; that every refusal is an invalid_argument
// *h4r.Error with a message and a Field that is the caller's prefix
// followed by path syntax; that Decode refuses whatever encoding/json
// refuses, and in the walk that runs the types' own decoders (so the
// fallback for gaps in the walk is never used); and that what it accepts decodes as encoding/json decodes it.
// Seeds: below and testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"id": "mem-001", "kind": "test_failure", "text": "login failed", "content": {"a": {"b": [1, "x", null]}}, "metadata": {"createdAt": "2026-11-20T10:00:00Z", "importance": 0.7, "trust": 0.9, "restrictedToGroups": ["qa"], "tags": ["selector"], "test_type": "e2e"}, "links": [{"type": "caused_by", "target": "mem-000", "strength": 1}]}`,
		`{"items": [{"id": "a", "text": "x"}, {"id": "b", "text": "y", "metadata": {"trust": "high"}}]}`,
		`[{"id": "a", "text": "x"}, {"id": "b", "text": "y", "links": [null]}]`,
		`{"query": {"type": "keyword", "text": "a", "filters": {"kind": ["fix"], "x": 1, "x": 2}}, "limit": 1e3, "weights": {"recency": 1}}`,
		`{"specialist": {"id": "x", "securityLevel": "top", "authorizedGroups": ["qa", null]}, "query": {"text": "a"}}`,
		`{"id": "x", "securityLevel": 3}`,
		`{"base": "b", "shadow": 3, "name": "n", "count": -2, "small": 300, "unsig": -1, "Ratio": 1e39, "flag": "yes", "tags": ["a", null], "scores": {"x": null}, "byId": {"1": "a", "01": "b"}, "meta": {"k": {"Type": "t"}}, "extra": {"n": [1e400]}, "raw": {"k": 1, "k": 2}, "pair": [1, 2, 3], "when": "yesterday", "opt": null, "blob": "!!", "weights": {"Recency": null}, "level": "public"}`,
		`{"name": "a", "NAME": "b", "n\u0061me": "c"}`,
		"{\"id\": \"caf\xe9\", \"text\": \"\\ud800\", \"content\": {\"\\udc00\": \"\\ud83d\\ude00\"}}",
		"{\"na\xffme\": 1}",
		`{"name": "a"} {}`, `{"name": `, `{"a b": 1, "": 2}`, `null`, ``, ` `, `[]`, `[[[[[[]]]]]]`, `"x"`, `0`, `-0.0e-0`, `true`,
		`{"extra": {"deep": [[[[{"a": [[{}]]}]]]]}}`,
		`{"metadata": {"HasCredentials": true, "piiFields": [null]}}`,
		`{"query": {"text": "a"}, "extra": "e", "Extra": "f"}`,
	} {
		f.Add([]byte(seed))
	}
	targets := []func() any{newDoc, newItem, newItems, newBatch, newRequest, newEmbedded, newSpecialist}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, newTarget := range targets {
			got := newTarget()
			err := Decode(data, got, "p")
			want := newTarget()
			stdErr := stdDecode(data, want)
			if err != nil {
				var herr *h4r.Error
				if !errors.As(err, &herr) || herr.Code != h4r.EINVALID {
					t.Fatalf("%T: error %v (%T) is not an invalid_argument *h4r.Error", got, err, err)
				}
				if herr.Message == "" || !utf8.ValidString(herr.Message) {
					t.Fatalf("%T: message %q is empty or not UTF-8", got, herr.Message)
				}
				if rest, ok := strings.CutPrefix(herr.Field, "p"); !ok || !validSegments(rest) {
					t.Fatalf("%T: field %q is not the prefix followed by a JSON path", got, herr.Field)
				}
				if new(Decoder).check(data, reflect.TypeOf(got).Elem(), "p", true) == nil {
					t.Fatalf("%T: the walk accepted what encoding/json refused: %v", got, err)
				}
				continue
			}
			if stdErr != nil {
				t.Fatalf("%T: accepted what encoding/json refuses: %v", got, stdErr)
			}
			// The fast path (types' own decoders left to encoding/json)
			// accepts only what the full walk accepts.
			if err := new(Decoder).check(data, reflect.TypeOf(got).Elem(), "p", true); err != nil {
				t.Fatalf("%T: accepted what the full walk refuses: %v", got, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%T: decoded\n%+v\nencoding/json decodes\n%+v", got, got, want)
			}
		}
	})
}

// stdDecode is encoding/json's strictest decode of exactly one value.
func stdDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the value")
	}
	return nil
}
