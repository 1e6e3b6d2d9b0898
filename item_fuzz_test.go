package h4r_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// FuzzItemValidate decodes arbitrary JSON as an item the way ingest does
// (jsonstrict.Decode, then Validate) and checks what ingest relies on:
// nothing panics; a refusal is an invalid_argument *h4r.Error naming a
// field of the item; and an accepted item, once normalised, encodes to JSON
// that decodes and validates again to the same item (so what the store
// writes, it can read back). Seeds: testdata/fuzz/FuzzItemValidate.
func FuzzItemValidate(f *testing.F) {
	for _, seed := range []string{
		`{"id": "mem-001", "kind": "test_failure", "text": "login failed", "content": {"a": {"b": [1, "x", null]}}, "metadata": {"createdAt": "2026-11-20T10:00:00Z", "importance": 0.7, "trust": 0.9, "sensitivity": 0.2, "novelty": 0.1, "containsPII": true, "piiFields": ["$.content.a"], "restrictedToGroups": ["qa"], "tags": ["selector"], "source": "playwright", "test_type": "e2e"}, "links": [{"type": "caused_by", "target": "mem-000", "strength": 1}]}`,
		`{"id": " x", "text": "t"}`,
		`{"id": "x", "text": "t", "metadata": {"trust": 1.5}}`,
		`{"id": "x", "text": "t", "metadata": {"accessCount": 99, "version": 7}}`,
		`{"id": "x", "text": "t", "metadata": {"piiFields": ["content.a"]}}`,
		`{"id": "x", "text": "t", "content": {"Mail": [{"eMail": "a"}]}, "metadata": {"containsPII": true, "piiFields": ["$.content.mail[-1].EMAIL", "$..x"]}}`,
		`{"id": "x", "text": "t", "content": {"a": {"B": 1, "b": 2}}, "metadata": {"piiFields": ["$.content.*.b", "$.content['A'].c"], "textClean": true}}`,
		`{"id": "x", "text": "t", "content": {"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}}`,
		`{"id": "x", "text": "t", "links": [{"type": "", "target": "y"}]}`,
		`{"id": "x", "text": "\ud800"}`,
		`{"id": "x", "text": "t", "metadata": {"createdAt": "yesterday"}}`,
		`{"id": "x", "text": "t", "metadata": {"nested": {"deep": [[[[[[[[[1]]]]]]]]]}}}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		var it h4r.Item
		err := jsonstrict.Decode(data, &it, "")
		if err == nil {
			err = it.Validate("")
		}
		if err != nil {
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID {
				t.Fatalf("refusal %v (%T) is not an invalid_argument *h4r.Error", err, err)
			}
			if e.Message == "" {
				t.Fatalf("refusal without a message: %+v", e)
			}
			return
		}
		it.Normalize(now)
		b, err := json.Marshal(&it)
		if err != nil {
			t.Fatalf("an accepted item does not encode: %v", err)
		}
		var again h4r.Item
		if err := jsonstrict.Decode(b, &again, ""); err != nil {
			t.Fatalf("an accepted item does not decode from its own JSON: %v\n%s", err, b)
		}
		if err := again.Validate(""); err != nil {
			t.Fatalf("an accepted item fails validation after a round trip: %v\n%s", err, b)
		}
		again.Normalize(now)
		b2, err := json.Marshal(&again)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(b2) {
			t.Fatalf("the round trip changed the item:\n%s\n%s", b, b2)
		}
		if strings.TrimSpace(again.ID) == "" || again.ID != it.ID {
			t.Fatalf("id %q became %q", it.ID, again.ID)
		}
	})
}
