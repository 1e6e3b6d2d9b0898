package scs

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

// decodeContent decodes JSON the way the store does, so content holds the
// generic map[string]any and []any values redaction walks.
func decodeContent(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

func TestRedact(t *testing.T) {
	const content = `{"personalData": {"email": "a@b.c", "phone": "123"},
		"users": [{"email": "x@y.z", "role": "admin"}, {"role": "bot"}, "not-an-object"],
		"list": ["first", "second", "third"],
		"key with spaces": "hidden", "k": "v", "n": 7}`
	cases := []struct {
		name        string
		paths       []string
		wantApplied []string
		wantText    string
		wantContent string // JSON; "null" when content is removed
	}{
		{"nothing to redact", nil, nil, "the text", content},
		{"text", []string{"$.text"}, []string{"$.text"}, "[REDACTED]", content},
		{"nested member", []string{"$.content.personalData.email"}, []string{"$.content.personalData.email"}, "the text",
			strings.Replace(content, `"email": "a@b.c"`, `"email": "[REDACTED]"`, 1)},
		{"whole object member", []string{"$.content.personalData"}, []string{"$.content.personalData"}, "the text",
			strings.Replace(content, `{"email": "a@b.c", "phone": "123"}`, `"[REDACTED]"`, 1)},
		{"wildcard over list then member", []string{"$.content.users[*].email"}, []string{"$.content.users[*].email"}, "the text",
			strings.Replace(content, `"x@y.z"`, `"[REDACTED]"`, 1)},
		{"wildcard over list", []string{"$.content.list[*]"}, []string{"$.content.list[*]"}, "the text",
			strings.Replace(content, `["first", "second", "third"]`, `["[REDACTED]", "[REDACTED]", "[REDACTED]"]`, 1)},
		{"wildcard over object", []string{"$.content.personalData.*"}, []string{"$.content.personalData.*"}, "the text",
			strings.Replace(content, `{"email": "a@b.c", "phone": "123"}`, `{"email": "[REDACTED]", "phone": "[REDACTED]"}`, 1)},
		{"index", []string{"$.content.list[0]"}, []string{"$.content.list[0]"}, "the text",
			strings.Replace(content, `"first"`, `"[REDACTED]"`, 1)},
		{"negative index", []string{"$.content.list[-1]"}, []string{"$.content.list[-1]"}, "the text",
			strings.Replace(content, `"third"`, `"[REDACTED]"`, 1)},
		{"quoted key with spaces", []string{"$.content['key with spaces']"}, []string{"$.content['key with spaces']"}, "the text",
			strings.Replace(content, `"hidden"`, `"[REDACTED]"`, 1)},
		{"double-quoted key", []string{`$.content["k"]`}, []string{`$.content["k"]`}, "the text",
			strings.Replace(content, `"k": "v"`, `"k": "[REDACTED]"`, 1)},
		{"whole content", []string{"$.content"}, []string{"$.content"}, "the text", "null"},
		{"missing paths are ignored", []string{"$.content.nope", "$.content.personalData.nope", "$.content.list[3]",
			"$.content.list[-4]", "$.content.n.deeper", "$.content.list.name", "$.content.personalData[0]"}, nil, "the text", content},
		{"mixed present and missing, repeats reported once", []string{"$.content.nope", "$.text", "$.content.n", "$.text"},
			[]string{"$.text", "$.content.n"}, "[REDACTED]", strings.Replace(content, `"n": 7`, `"n": "[REDACTED]"`, 1)},
		{"outer path after inner path", []string{"$.content.personalData.email", "$.content.personalData"},
			[]string{"$.content.personalData.email", "$.content.personalData"}, "the text",
			strings.Replace(content, `{"email": "a@b.c", "phone": "123"}`, `"[REDACTED]"`, 1)},
		{"inner path after outer path names nothing", []string{"$.content.personalData", "$.content.personalData.email"},
			[]string{"$.content.personalData"}, "the text",
			strings.Replace(content, `{"email": "a@b.c", "phone": "123"}`, `"[REDACTED]"`, 1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			original := decodeContent(t, content)
			d := h4r.Delivered{ID: "x", Text: "the text", Content: original}
			applied, err := Redact(&d, tc.paths, h4r.RedactionMarker)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(applied, tc.wantApplied) {
				t.Errorf("applied = %q, want %q", applied, tc.wantApplied)
			}
			if d.Text != tc.wantText {
				t.Errorf("text = %q, want %q", d.Text, tc.wantText)
			}
			var want map[string]any
			if tc.wantContent != "null" {
				want = decodeContent(t, tc.wantContent)
			}
			if !reflect.DeepEqual(d.Content, want) {
				t.Errorf("content = %v, want %v", d.Content, want)
			}
			if !reflect.DeepEqual(original, decodeContent(t, content)) {
				t.Errorf("Redact modified the input content: %v", original)
			}
		})
	}
}

func TestRedactInvalidPath(t *testing.T) {
	d := h4r.Delivered{ID: "x", Text: "secret", Content: map[string]any{"a": "b"}}
	applied, err := Redact(&d, []string{"$.text", "$.content.a", "$.metadata.owner"}, h4r.RedactionMarker)
	var herr *h4r.Error
	if !asError(err, &herr) || herr.Code != h4r.EINVALID || herr.Field != "redactedFields[2]" || !strings.Contains(herr.Message, "$.metadata.owner") {
		t.Fatalf("error = %v, want invalid_argument on redactedFields[2] naming the path", err)
	}
	if applied != nil || d.Text != "secret" || d.Content["a"] != "b" {
		t.Errorf("an invalid path changed the item: applied %q, %+v", applied, d)
	}
}

func TestRedactCopiesGoTypedContent(t *testing.T) {
	emails := []string{"a@b.c", "d@e.f"}
	d := h4r.Delivered{ID: "x", Text: "t", Content: map[string]any{"emails": emails, "big": int64(1) << 60}}
	applied, err := Redact(&d, []string{"$.content.emails[1]"}, "***")
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 1 || !reflect.DeepEqual(d.Content["emails"], []any{"a@b.c", "***"}) {
		t.Errorf("content = %v (applied %q), want the second email redacted", d.Content, applied)
	}
	if emails[1] != "d@e.f" {
		t.Errorf("the input []string was modified: %q", emails)
	}
	encoded, err := d.Encode()
	if err != nil || !strings.Contains(string(encoded), `"big":1152921504606846976`) {
		t.Errorf("large integer not kept exactly: %s (%v)", encoded, err)
	}
}

func asError(err error, target **h4r.Error) bool {
	e, ok := err.(*h4r.Error)
	if ok {
		*target = e
	}
	return ok
}

// collect returns every value p names in d, the way a reader of the
// delivered JSON would find them.
func collect(d h4r.Delivered, p Path) []any {
	if p.Root() == RootText {
		return []any{d.Text}
	}
	if d.Content == nil {
		return nil
	}
	nodes := []any{d.Content}
	if len(p.Steps()) == 0 {
		return nodes
	}
	for _, s := range p.Steps() {
		var next []any
		for _, n := range nodes {
			switch c := n.(type) {
			case map[string]any:
				switch s.Kind {
				case h4r.StepName:
					if v, ok := c[s.Name]; ok {
						next = append(next, v)
					}
				case h4r.StepWildcard:
					for _, v := range c {
						next = append(next, v)
					}
				}
			case []any:
				switch s.Kind {
				case h4r.StepIndex:
					i := s.Index
					if i < 0 {
						i += len(c)
					}
					if i >= 0 && i < len(c) {
						next = append(next, c[i])
					}
				case h4r.StepWildcard:
					next = append(next, c...)
				}
			}
		}
		nodes = next
	}
	return nodes
}

// FuzzRedact: no panics; after redaction every value a path names is the
// marker (or gone); a path is reported applied exactly when it named
// something; the input content is never modified.
func FuzzRedact(f *testing.F) {
	f.Add(`{"personalData": {"email": "a@b.c"}, "list": [1, {"email": "x"}]}`, "$.content.personalData.email", "[REDACTED]")
	f.Add(`{"list": [{"email": "x"}, {"email": "y"}, 3]}`, "$.content.list[*].email", "#")
	f.Add(`{"list": ["a", "b"]}`, "$.content.list[-2]", "")
	f.Add(`{"key with spaces": {"a": [1, 2]}}`, "$.content['key with spaces'].a[1]", "X")
	f.Add(`{"a": 1}`, "$.content", "X")
	f.Add(`{"a": 1}`, "$.text", "X")
	f.Add(`{"a": {"b": {"c": 1}}}`, "$.content.*.*", "X")
	f.Fuzz(func(t *testing.T, contentJSON, raw, marker string) {
		var content map[string]any
		if json.Unmarshal([]byte(contentJSON), &content) != nil {
			return
		}
		var snapshot map[string]any
		_ = json.Unmarshal([]byte(contentJSON), &snapshot)
		d := h4r.Delivered{ID: "fuzz", Text: "some text", Content: content}
		p, perr := ParsePath(raw)
		if perr != nil {
			if _, err := Redact(&d, []string{raw}, marker); err == nil {
				t.Fatalf("Redact accepted %q, which ParsePath rejects: %v", raw, perr)
			}
			if d.Text != "some text" || !reflect.DeepEqual(d.Content, snapshot) {
				t.Fatalf("a rejected path changed the item")
			}
			return
		}
		before := collect(d, p)
		applied, err := Redact(&d, []string{raw}, marker)
		if err != nil {
			t.Fatalf("Redact(%q): %v", raw, err)
		}
		if !reflect.DeepEqual(content, snapshot) {
			t.Fatalf("Redact modified the input content")
		}
		if wantApplied := len(before) > 0; (len(applied) == 1) != wantApplied {
			t.Fatalf("applied = %q, but the path named %d values before", applied, len(before))
		}
		for _, v := range collect(d, p) {
			if v != marker {
				t.Fatalf("after redacting %s the path still names %#v", raw, v)
			}
		}
		if _, err := d.Encode(); err != nil {
			t.Fatalf("redacted item does not encode: %v", err)
		}
	})
}
