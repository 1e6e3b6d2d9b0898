package h4r_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

type inner struct {
	Weight float64 `json:"weight"`
}

type outer struct {
	Name  string           `json:"name"`
	Links []inner          `json:"links"`
	Meta  map[string]inner `json:"meta"`
	Raw   json.RawMessage  `json:"raw"`
}

type withEmbedded struct {
	h4r.ContextRequest
	Extra string `json:"extra"`
}

func TestDecodeStrictNamesTheField(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		into      any
		prefix    string
		wantField string
		wantMsg   string
	}{
		{"unknown top-level field", `{"name": "a", "nope": 1}`, &outer{}, "", "nope", `unknown field "nope"`},
		{"unknown field in a list element", `{"links": [{"weight": 1}, {"weight": 2, "colour": "red"}]}`, &outer{}, "items[3]", "items[3].links[1].colour", `unknown field "colour"`},
		{"unknown field in a map value", `{"meta": {"k": {"wieght": 1}}}`, &outer{}, "", "meta.k.wieght", `unknown field "wieght"`},
		{"unknown field under an embedded struct", `{"query": {"text": "x", "lang": "en"}}`, &withEmbedded{}, "", "query.lang", `unknown field "lang"`},
		{"raw JSON accepts anything", `{"raw": {"anything": 1}, "zzz": 1}`, &outer{}, "", "zzz", `unknown field "zzz"`},
		{"type error in an embedded struct", `{"limit": "ten"}`, &withEmbedded{}, "payload", "payload.limit", "expected an integer, got JSON string"},
		{"type error on an object", `[1]`, &outer{}, "", "", "expected an object, got JSON array"},
		{"type error in a list", `{"links": [{"weight": "x"}]}`, &outer{}, "", "links.weight", "expected a number, got JSON string"},
		{"malformed", `{"name": `, &outer{}, "body", "body", "unexpected end of input"},
		{"trailing data", `{"name": "a"} {}`, &outer{}, "", "", "unexpected data after the JSON value"},
		{"empty", ``, &outer{}, "", "", "empty body"},
		{"a type's own error is prefixed", `{"specialist": {"id": "x", "securityLevel": "top"}}`, &h4r.ContextRequest{}, "payload", "payload.securityLevel", "unknown security level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := h4r.DecodeStrict([]byte(tt.input), tt.into, tt.prefix)
			var herr *h4r.Error
			if !errors.As(err, &herr) {
				t.Fatalf("error = %v, want an *h4r.Error", err)
			}
			if herr.Code != h4r.EINVALID || herr.Field != tt.wantField {
				t.Errorf("code %q field %q, want invalid_argument on %q (message %q)", herr.Code, herr.Field, tt.wantField, herr.Message)
			}
			if !strings.Contains(herr.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", herr.Message, tt.wantMsg)
			}
		})
	}
}

func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"query": {"text": "x"}}`, `{"query": {"text": "x", "lang": 1}}`, `{"limit": "x"}`, `[`, `{"weights": {"a": 1}}`, `{"budget": {"maxTokens": -1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req h4r.ContextRequest
		err := h4r.DecodeStrict(data, &req, "payload")
		if err == nil {
			return
		}
		var herr *h4r.Error
		if !errors.As(err, &herr) || herr.Code != h4r.EINVALID {
			t.Fatalf("error %v is not invalid_argument", err)
		}
	})
}
