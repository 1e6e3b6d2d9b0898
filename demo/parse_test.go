package demo

import (
	"errors"
	"strings"
	"testing"

	"github.com/h4r/h4r"
)

func TestParse(t *testing.T) {
	const (
		a = `{"id":"a","text":"first","metadata":{"createdAt":"2026-11-20T10:00:00Z"}}`
		b = `{"id":"b","text":"second","metadata":{},"links":[{"type":"fixes","target":"a"}]}`
	)
	tests := []struct {
		name      string
		data      string
		wantIDs   string // comma-joined, when valid
		wantField string // the offending field, when invalid
		wantMsg   string // part of the message, when invalid
	}{
		{"two items", a + "\n" + b + "\n", "a,b", "", ""},
		{"blank lines and no final newline", "\n" + a + "\n\n  \n" + b, "a,b", "", ""},
		{"CRLF line ends", a + "\r\n" + b + "\r\n", "a,b", "", ""},
		{"empty corpus", "", "", "", ""},
		{"malformed JSON names the line", a + "\n{\"id\":\"b\",", "", "line 2", "malformed JSON"},
		{"unknown field is a typo", `{"id":"a","txt":"x","text":"y","metadata":{}}`, "", "line 1.txt", "unknown field"},
		{"two values on one line", a + `{"id":"c"}`, "", "line 1", "unexpected data"},
		{"score out of range", "\n" + `{"id":"a","text":"t","metadata":{"trust":1.5}}`, "", "line 2.metadata.trust", "trust must be in [0, 1]"},
		{"wrong metadata type", `{"id":"a","text":"t","metadata":{"createdAt":"yesterday"}}`, "", "line 1.metadata.createdAt", "RFC 3339"},
		{"missing text", `{"id":"a","metadata":{}}`, "", "line 1.text", "text is required"},
		{"duplicate id", a + "\n" + b + "\n" + a, "", "line 3.id", "already used on line 1"},
		{"dangling link", a + "\n" + strings.Replace(b, `"target":"a"`, `"target":"zz"`, 1), "", "line 2.links[0].target", `"zz" is not an item`},
		{"link to a later line is fine", b + "\n" + a, "b,a", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, err := parse([]byte(tt.data))
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("parse error: %v", err)
				}
				var ids []string
				for _, it := range items {
					ids = append(ids, it.ID)
				}
				if got := strings.Join(ids, ","); got != tt.wantIDs {
					t.Errorf("ids = %q, want %q", got, tt.wantIDs)
				}
				return
			}
			var e *h4r.Error
			if !errors.As(err, &e) {
				t.Fatalf("parse error = %v, want an *h4r.Error naming %s", err, tt.wantField)
			}
			if e.Code != h4r.EINVALID || e.Field != tt.wantField || !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("error = %s field %q %q, want invalid_argument field %q containing %q", e.Code, e.Field, e.Message, tt.wantField, tt.wantMsg)
			}
		})
	}
}

// parse is the reader of the corpus file; a corpus edited by hand (or a
// fork's own corpus) is outside input to it. Whatever it reads, it must not
// panic, and what it accepts must be valid and closed under links.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"id":"a","text":"x","metadata":{}}`))
	f.Add([]byte("{\"id\":\"a\",\"text\":\"x\",\"metadata\":{}}\n{\"id\":\"b\",\"text\":\"y\",\"metadata\":{\"trust\":0.2},\"links\":[{\"type\":\"fixes\",\"target\":\"a\"}]}"))
	f.Add([]byte(`{"id":"a","text":"x","metadata":{"piiFields":["$.content.p"]},"content":{"p":{"email":"a@b.c"}}}`))
	f.Add([]byte("\n\n{\"id\":"))
	if lines := strings.SplitN(string(corpus), "\n", 4); len(lines) == 4 {
		f.Add([]byte(strings.Join(lines[:3], "\n")))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := parse(data)
		if err != nil {
			var e *h4r.Error
			if !errors.As(err, &e) || !strings.HasPrefix(e.Field, "line ") {
				t.Fatalf("error %v does not name a line", err)
			}
			return
		}
		ids := map[string]bool{}
		for _, it := range items {
			if err := it.Validate(""); err != nil {
				t.Fatalf("accepted an invalid item: %v", err)
			}
			ids[it.ID] = true
		}
		if len(ids) != len(items) {
			t.Fatalf("accepted duplicate ids")
		}
		for _, it := range items {
			for _, l := range it.Links {
				if !ids[l.Target] {
					t.Fatalf("accepted a link to %q, not in the corpus", l.Target)
				}
			}
		}
	})
}
