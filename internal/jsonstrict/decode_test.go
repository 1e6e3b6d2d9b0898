package jsonstrict

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
)

// link and doc cover every kind the walk handles.
type link struct {
	Type     string  `json:"type"`
	Strength float64 `json:"strength"`
}

type base struct {
	Base   string `json:"base"`
	Shadow string `json:"shadow"`
}

type doc struct {
	base
	Shadow  int                `json:"shadow"` // hides base.Shadow, as in encoding/json
	Name    string             `json:"name"`
	Count   int                `json:"count"`
	Small   int8               `json:"small"`
	Unsig   uint16             `json:"unsig"`
	Ratio   float32            // no tag: the JSON name is "Ratio"
	Flag    bool               `json:"flag"`
	Links   []link             `json:"links"`
	Tags    []string           `json:"tags"`
	Scores  map[string]float64 `json:"scores"`
	ByID    map[int]string     `json:"byId"`
	Meta    map[string]link    `json:"meta"`
	Extra   any                `json:"extra"`
	Raw     json.RawMessage    `json:"raw"`
	Pair    [2]int             `json:"pair"`
	When    time.Time          `json:"when"`
	Opt     *float64           `json:"opt"`
	Blob    []byte             `json:"blob"`
	Weights h4r.Weights        `json:"weights"`
	Level   h4r.SecurityLevel  `json:"level"`
	Ignored string             `json:"-"`
	//lint:ignore U1000 an unexported field, which JSON must not reach
	private int
}

type batch struct {
	Items []h4r.Item `json:"items"`
}

type withEmbedded struct {
	h4r.ContextRequest
	Extra string `json:"extra"`
}

func TestDecodeRefusesWithThePath(t *testing.T) {
	item := func(rest string) string { return `{"id": "a", "text": "x"` + rest + `}` }
	tests := []struct {
		name      string
		into      func() any
		prefix    string
		input     string
		wantField string
		wantMsg   string
	}{
		// Unknown fields: exact names only.
		{"unknown top-level field", newDoc, "", `{"name": "a", "nope": 1}`, "nope", `unknown field "nope" (want one of "base", "shadow", "name"`},
		{"unknown field in a list element", newDoc, "items[3]", `{"links": [{"type": "x"}, {"type": "y", "colour": "red"}]}`, "items[3].links[1].colour", `unknown field "colour" (want one of "type", "strength")`},
		{"unknown field in a map value", newDoc, "", `{"meta": {"k": {"wieght": 1}}}`, "meta.k.wieght", `unknown field "wieght"`},
		{"unknown field under an embedded struct", newEmbedded, "", `{"query": {"text": "x", "lang": "en"}}`, "query.lang", `unknown field "lang"`},
		{"a key in another case after the real one", newItem, "", item(`, "metadata": {}, "METADATA": {"trust": 1}`), "METADATA", `unknown field "METADATA" (did you mean "metadata"?)`},
		{"a key in another case alone", newItem, "", `{"ID": "a", "text": "x"}`, "ID", `unknown field "ID" (did you mean "id"?)`},
		{"a case variant in a nested struct", newBatch, "", `{"items": [{"id": "a", "text": "x", "links": [{"Type": "t", "target": "b"}]}]}`, "items[0].links[0].Type", `(did you mean "type"?)`},
		{"the Go name of a tagged field", newDoc, "", `{"Name": "a"}`, "Name", `(did you mean "name"?)`},
		{"a field tagged -", newDoc, "", `{"Ignored": "a"}`, "Ignored", `unknown field "Ignored"`},
		{"an unexported field", newDoc, "", `{"private": 1}`, "private", `unknown field "private"`},
		{"a key that is no plain name", newDoc, "p", `{"a b": 1}`, `p["a b"]`, `unknown field "a b"`},

		// Duplicate keys, at any depth and in any object.
		{"duplicate top-level key", newDoc, "", `{"name": "a", "name": "b"}`, "name", `duplicate key "name"`},
		{"duplicate key spelt with an escape", newDoc, "", `{"name": "a", "n\u0061me": "b"}`, "name", `duplicate key "name"`},
		{"duplicate key in content", newItem, "", item(`, "content": {"a": {"b": 1, "b": 2}}`), "content.a.b", `duplicate key "b"`},
		{"duplicate key in metadata", newItem, "items[0]", item(`, "metadata": {"trust": 0.1, "trust": 0.9}`), "items[0].metadata.trust", `duplicate key "trust"`},
		{"duplicate key in raw JSON", newDoc, "", `{"raw": {"a": [{"k": 1, "k": 2}]}}`, "raw.a[0].k", `duplicate key "k"`},
		{"duplicate key in an any", newDoc, "", `{"extra": [{"x": 1, "x": 1}]}`, "extra[0].x", `duplicate key "x"`},
		{"duplicate key in query filters", newRequest, "", `{"query": {"text": "a", "filters": {"x": 1, "x": 2}}}`, "query.filters.x", `duplicate key "x"`},
		{"duplicate integer map key", newDoc, "", `{"byId": {"1": "a", "01": "b"}}`, "byId.01", "the number 1 is already a key"},
		{"duplicate key in weights", newDoc, "", `{"weights": {"trust": 1, "trust": 0}}`, "weights.trust", `duplicate key "trust"`},
		{"duplicate items key", newBatch, "", `{"items": [], "items": []}`, "items", `duplicate key "items"`},

		// Strings must decode to what they say.
		{"invalid UTF-8 in a string", newItem, "", "{\"id\": \"caf\xe9\", \"text\": \"x\"}", "id", "not valid UTF-8 (byte 0xe9"},
		{"invalid UTF-8 in a key", newDoc, "payload", "{\"na\xffme\": 1}", "payload", `object key "na\xffme" is not valid UTF-8`},
		{"invalid UTF-8 in a nested key", newItem, "", "{\"id\": \"a\", \"text\": \"x\", \"content\": {\"k\": {\"\xc3\": 1}}}", "content.k", "is not valid UTF-8"},
		{"invalid UTF-8 in metadata", newItem, "", "{\"id\": \"a\", \"text\": \"x\", \"metadata\": {\"note\": \"\xff\"}}", "metadata.note", "not valid UTF-8"},
		{"a UTF-8-encoded surrogate", newItem, "", "{\"id\": \"\xed\xa0\x80\", \"text\": \"x\"}", "id", "not valid UTF-8"},
		{"a body in UTF-16", newDoc, "", "\xff\xfe{\x00}\x00", "", "malformed JSON at line 1, column 1"},
		{"a lone high surrogate", newItem, "", item(`, "kind": "\ud800"`), "kind", `lone UTF-16 surrogate \ud800`},
		{"a high surrogate then a letter", newItem, "", `{"id": "\ud800\u0041", "text": "x"}`, "id", `lone UTF-16 surrogate \ud800`},
		{"a lone low surrogate in content", newItem, "", item(`, "content": {"k": "x\udc00"}`), "content.k", `lone UTF-16 surrogate \udc00`},
		{"a lone surrogate in a key", newDoc, "", `{"extra": {"\udfff": 1}}`, "extra", `object key "\\udfff" holds a lone UTF-16 surrogate`},
		{"a lone surrogate in raw JSON", newDoc, "", `{"raw": ["\uDBFF"]}`, "raw[0]", "lone UTF-16 surrogate"},

		// Kinds and ranges.
		{"a string for an integer", newEmbedded, "payload", `{"limit": "ten"}`, "payload.limit", `want an integer, got the string "ten"`},
		{"a number for a string", newDoc, "", `{"name": 1}`, "name", "want a string, got the number 1"},
		{"an object for a list of strings", newDoc, "", `{"tags": {}}`, "tags", "want a list of strings, got an object"},
		{"a list for an object", newDoc, "", `[1]`, "", "want an object, got a list"},
		{"true for a number", newDoc, "", `{"links": [{"strength": true}]}`, "links[0].strength", "want a number, got true"},
		{"a string for a boolean", newDoc, "", `{"flag": "yes"}`, "flag", `want true or false, got the string "yes"`},
		{"a fraction for an integer", newDoc, "", `{"count": 1.5}`, "count", "want an integer, got 1.5"},
		{"an exponent for an integer", newRequest, "", `{"query": {"text": "a"}, "limit": 1e3}`, "limit", "want an integer, got 1e3"},
		{"an integer out of range", newDoc, "", `{"small": 300}`, "small", "want an integer between -128 and 127, got 300"},
		{"a negative unsigned integer", newDoc, "", `{"unsig": -1}`, "unsig", "want a whole number between 0 and 65535, got -1"},
		{"a float32 out of range", newDoc, "", `{"Ratio": 1e39}`, "Ratio", "out of range for a 32-bit float"},
		{"a float64 out of range in an any", newDoc, "", `{"extra": {"n": [1e400]}}`, "extra.n[0]", "number 1e400 is out of range"},
		{"a map key that is no integer", newDoc, "", `{"byId": {"x": "a"}}`, "byId.x", `key "x": want an integer`},
		{"bad base64", newDoc, "", `{"blob": "!!"}`, "blob", "want base64"},
		{"a long string is not echoed", newDoc, "", `{"count": "` + strings.Repeat("x", 100) + `"}`, "count", "want an integer, got a string"},

		// null where encoding/json would keep a zero value.
		{"null in metadata.restrictedToGroups", newItem, "", item(`, "metadata": {"restrictedToGroups": ["ops", null]}`), "metadata.restrictedToGroups[1]", "want a string, got null"},
		{"null in a list of strings", newDoc, "", `{"tags": [null]}`, "tags[0]", "want a string, got null"},
		{"null in a list of objects", newItem, "", item(`, "links": [null]`), "links[0]", "want an object, got null"},
		{"null as a map value", newDoc, "", `{"scores": {"a": null}}`, "scores.a", "want a number, got null"},
		{"null as a weight", newDoc, "", `{"weights": {"recency": null}}`, "weights.recency", "want a number that fits a 64-bit float, got null"},
		{"null as the whole document", newDoc, "body", `null`, "body", "want an object, got null"},
		{"too many array elements", newDoc, "", `{"pair": [1, 2, 3]}`, "pair[2]", "too many elements: want at most 2"},

		// A type's own UnmarshalJSON: its error is prefixed by the path.
		{"security level in a request", newRequest, "payload", `{"specialist": {"id": "x", "securityLevel": "top"}}`, "payload.specialist.securityLevel", `unknown security level "top"`},
		{"security level not a string", newSpecialist, "meta.from", `{"id": "x", "securityLevel": 3}`, "meta.from.securityLevel", "security level must be a string"},
		{"metadata type in the fourth item", newBatch, "", `{"items": [` + strings.Repeat(item("")+", ", 3) + item(`, "metadata": {"trust": "high"}`) + `]}`, "items[3].metadata.trust", "wrong type for trust: want a number in [0, 1]"},
		{"metadata key in another case", newItem, "", item(`, "metadata": {"HasCredentials": true}`), "metadata.HasCredentials", `did you mean "hasCredentials"?`},
		{"metadata that is no object", newItem, "line 7", item(`, "metadata": [1]`), "line 7.metadata", "metadata must be a JSON object"},
		{"link strength in a batch", newBatch, "", `{"items": [{"id": "a", "text": "x", "links": [{"type": "t", "target": "b"}, {"type": "t", "target": "b", "strength": "strong"}]}]}`, "items[0].links[1].strength", `want a number, got the string "strong"`},
		{"a weight that is no number", newDoc, "", `{"weights": {"recency": "high"}}`, "weights.recency", `want a number that fits a 64-bit float, got "high"`},
		{"an unknown signal in another case", newDoc, "", `{"weights": {"Recency": 1}}`, "weights.Recency", `unknown signal "Recency" (did you mean "recency"?)`},
		{"an unknown signal that is no plain name", newDoc, "", `{"weights": {"a b": 1}}`, "weights", `unknown signal "a b"`},
		{"weights that are no object", newDoc, "", `{"weights": [1]}`, "weights", "want an object of signal names to numbers"},
		{"a bad timestamp", newDoc, "", `{"when": "yesterday"}`, "when", `want an RFC 3339 timestamp string such as "2026-11-20T10:00:00Z": parsing time "yesterday"`},
		{"a list at the top", newItems, "", `[{"id": "a", "text": "x"}, {"id": 1}]`, "[1].id", "want a string, got the number 1"},

		// Syntax.
		{"malformed inside a list", newDoc, "", `{"name": "a", "links": [{"type": x}]}`, "links[0].type", "malformed JSON at line 1, column 34"},
		{"malformed on the second line", newDoc, "", "{\"name\": \"a\",\n \"count\": 1,}", "", "malformed JSON at line 2"},
		{"truncated", newDoc, "body", `{"name": `, "body.name", "the input ends inside a value"},
		{"truncated string", newDoc, "", `{"name": "ab`, "name", "the input ends inside a value"},
		{"trailing data", newDoc, "", `{"name": "a"} {}`, "", "unexpected data after the JSON value at line 1, column 15"},
		{"trailing garbage", newDoc, "", `{"name": "a"}x`, "", "unexpected data after the JSON value"},
		{"empty", newDoc, "", ``, "", "empty input: want an object"},
		{"only white space", newItems, "", " \n\t", "", "empty input: want a list"},
	}
	seen := map[string]bool{}
	// shared decodes every case after the one before, with the members of
	// the types met so far kept: it must refuse as a fresh decode does.
	shared := new(Decoder)
	for _, tt := range tests {
		if seen[tt.name] {
			t.Fatalf("two cases named %q", tt.name)
		}
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			err := Decode([]byte(tt.input), tt.into(), tt.prefix)
			if again := shared.Decode([]byte(tt.input), tt.into(), tt.prefix); fmt.Sprint(again) != fmt.Sprint(err) {
				t.Errorf("a Decoder that decoded the cases before refuses with %v, a fresh decode with %v", again, err)
			}
			var herr *h4r.Error
			if !errors.As(err, &herr) {
				t.Fatalf("error = %v (%T), want an *h4r.Error", err, err)
			}
			if herr.Code != h4r.EINVALID || herr.Field != tt.wantField {
				t.Errorf("code %q field %q, want %q on %q (message %q)", herr.Code, herr.Field, h4r.EINVALID, tt.wantField, herr.Message)
			}
			if !strings.Contains(herr.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", herr.Message, tt.wantMsg)
			}
		})
	}
}

// TestDecodeAcceptsWhatEncodingJSONDecodes: valid documents are decoded,
// and exactly as encoding/json decodes them.
func TestDecodeAcceptsWhatEncodingJSONDecodes(t *testing.T) {
	tests := []struct {
		name  string
		into  func() any
		input string
	}{
		{"every kind", newDoc, `{"base": "b", "shadow": 3, "name": "n", "count": -2, "small": -128, "unsig": 65535, "Ratio": 0.5, "flag": true,
			"links": [{"type": "t", "strength": 0.5}], "tags": ["a", ""], "scores": {"x": 1e300}, "byId": {"-1": "a", "2": "b"},
			"meta": {"k": {"type": "t"}}, "extra": {"a": [1, "x", null, true, {}]}, "raw": {"n": 1e400}, "pair": [1],
			"when": "2026-11-20T10:00:00+02:00", "opt": 0, "blob": "aGk=", "weights": {"relevance": 0.6, "recency": 0.4}, "level": "restricted"}`},
		{"null for fields", newDoc, `{"name": null, "count": null, "opt": null, "links": null, "tags": null, "scores": null, "extra": null, "raw": null, "when": null, "weights": null}`},
		{"null where a list holds pointers or anys", newDoc, `{"extra": [null], "raw": [null]}`},
		{"a surrogate pair and escapes", newItem, `{"id": "\ud83d\ude00 \u00e9 \"q\" \\ \/", "text": "caf\u00e9 ✓"}`},
		{"an item with everything", newItem, `{"id": "mem-001", "kind": "test_failure", "text": "login failed", "content": {"a": {"b": [1, "x", null]}},
			"metadata": {"createdAt": "2026-11-20T10:00:00Z", "importance": 0.7, "trust": 0.9, "sensitivity": 0.2, "novelty": 0.1, "containsPII": true,
			"piiFields": ["$.content.a"], "restrictedToGroups": ["qa"], "tags": ["selector"], "source": "playwright", "test_type": "e2e", "Status": "x"},
			"links": [{"type": "caused_by", "target": "mem-000", "strength": 1}]}`},
		{"a request with an embedded struct", newEmbedded, `{"query": {"type": "keyword", "text": "a", "filters": {"kind": ["fix"], "n": 1}}, "limit": 5, "weights": {"recency": 0}, "extra": "e", "budget": {"maxItems": 1}}`},
		{"a list at the top", newItems, ` [ {"id": "a", "text": "x"} ] `},
		{"an empty object", newDoc, `{}`},
		{"null for a list at the top", newItems, `null`},
	}
	shared := new(Decoder) // decodes every case after the one before
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.into()
			if err := Decode([]byte(tt.input), got, "x"); err != nil {
				t.Fatalf("refused: %v", err)
			}
			again := tt.into()
			if err := shared.Decode([]byte(tt.input), again, "x"); err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("a Decoder that decoded the cases before gives %+v (error %v), a fresh decode %+v", again, err, got)
			}
			want := tt.into()
			if err := json.Unmarshal([]byte(tt.input), want); err != nil {
				t.Fatalf("encoding/json refuses it: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("decoded\n%+v\nencoding/json decodes\n%+v", got, want)
			}
		})
	}
}

func TestDecodeNeedsAPointer(t *testing.T) {
	var d doc
	for _, v := range []any{d, (*doc)(nil), nil} {
		if err := Decode([]byte(`{}`), v, ""); h4r.ErrorCode(err) != h4r.EINTERNAL {
			t.Errorf("Decode(%T) = %v, want an internal error", v, err)
		}
	}
}

// TestDecodeDepth: nesting past encoding/json's limit is refused with the
// path instead of by encoding/json without one, and 10000 levels still pass.
func TestDecodeDepth(t *testing.T) {
	tests := []struct {
		name   string
		levels int
		ok     bool
	}{
		{"at the limit", 10000, true},
		{"past the limit", 10001, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := `{"extra": ` + strings.Repeat("[", tt.levels-1) + strings.Repeat("]", tt.levels-1) + `}`
			err := Decode([]byte(input), &doc{}, "")
			stdErr := json.Unmarshal([]byte(input), &doc{})
			if (err == nil) != tt.ok || (stdErr == nil) != tt.ok {
				t.Fatalf("Decode: %v; encoding/json: %v; want accepted %v", err, stdErr, tt.ok)
			}
			if !tt.ok && (!strings.Contains(h4r.ErrorMessage(err), "nests more than 10000 levels") || !strings.HasPrefix(err.(*h4r.Error).Field, "extra[0][0]")) {
				t.Errorf("error = %v", err)
			}
		})
	}
}

func newDoc() any        { return &doc{} }
func newItem() any       { return &h4r.Item{} }
func newItems() any      { return &[]h4r.Item{} }
func newBatch() any      { return &batch{} }
func newRequest() any    { return &h4r.ContextRequest{} }
func newEmbedded() any   { return &withEmbedded{} }
func newSpecialist() any { return &h4r.Specialist{} }

// TestDecoderConcurrent: one Decoder serves many goroutines at once (a
// server's requests), each decoding what a fresh decode would; -race
// checks the kept members are shared safely.
func TestDecoderConcurrent(t *testing.T) {
	input := []byte(`{"query": {"type": "keyword", "text": "a"}, "limit": 5, "extra": "e", "budget": {"maxItems": 1}}`)
	want := newEmbedded()
	if err := Decode(input, want, ""); err != nil {
		t.Fatal(err)
	}
	d := new(Decoder)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			for range 50 {
				got := newEmbedded()
				if err := d.Decode(input, got, ""); err != nil || !reflect.DeepEqual(got, want) {
					errs <- fmt.Errorf("decoded %+v (error %v), want %+v", got, err, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
