package h4r_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/h4r/h4r"
	"github.com/h4r/h4r/internal/jsonstrict"
)

// TestMetadataKeysAreCaseSensitive: a well-known key in another case must
// not slip into Extra, where no policy rule reads it (an item could hide
// its credentials or sensitivity by a typo).
func TestMetadataKeysAreCaseSensitive(t *testing.T) {
	tests := []struct {
		name      string
		metadata  string
		wantField string // "" means accepted
	}{
		{"exact keys", `{"hasCredentials": true, "sensitivity": 0.9, "restrictedToGroups": ["ops"]}`, ""},
		{"credentials in another case", `{"HasCredentials": true}`, "metadata.HasCredentials"},
		{"sensitivity in capitals", `{"SENSITIVITY": 0.9}`, "metadata.SENSITIVITY"},
		{"groups in another case", `{"restrictedtogroups": ["ops"]}`, "metadata.restrictedtogroups"},
		{"other keys keep their case", `{"Status": "failed", "test_type": "e2e"}`, ""},
		// A key that reads as a policy key but is not one would also land in
		// Extra, unseen by policy (found by the adversarial client).
		{"credentials with a trailing space", `{"hasCredentials ": true}`, `metadata["hasCredentials "]`},
		{"sensitivity with a leading space", `{" sensitivity": 0.9}`, `metadata[" sensitivity"]`},
		{"credentials with a zero-width space", "{\"has\u200bCredentials\": true}", "metadata[\"has\u200bCredentials\"]"},
		{"groups with a byte-order mark", "{\"\ufeffrestrictedToGroups\": [\"ops\"]}", "metadata[\"\ufeffrestrictedToGroups\"]"},
		{"containsPII with a soft hyphen", "{\"contains\u00adPII\": true}", "metadata[\"contains\u00adPII\"]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var it h4r.Item
			err := jsonstrict.Decode([]byte(`{"id": "a", "text": "x", "metadata": `+tt.metadata+`}`), &it, "")
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var herr *h4r.Error
			if !errors.As(err, &herr) || herr.Field != tt.wantField {
				t.Fatalf("error = %v, want invalid_argument on %s", err, tt.wantField)
			}
		})
	}
	// What is accepted keeps its case in Extra.
	var m h4r.Metadata
	if err := json.Unmarshal([]byte(`{"Status": "failed"}`), &m); err != nil || m.Extra["Status"] != "failed" {
		t.Errorf("Extra = %v, %v", m.Extra, err)
	}
}

// TestValidatePIIFields: a piiFields path is parsed with the redactor's own
// grammar, and one that names nothing in content only because a key
// differs in case is refused, naming the key content has. A check of
// the "$." prefix alone would accept all of these.
func TestValidatePIIFields(t *testing.T) {
	content := map[string]any{
		"personalData": map[string]any{"email": "a@b.c"},
		"people":       []any{map[string]any{"Email": "x@y.z"}, map[string]any{"email": "u@v.w"}},
		"Both":         "x", "both": "y",
	}
	tests := []struct {
		name  string
		path  string
		field string // of the error; "" when accepted
		want  string // in the message
	}{
		{"exact", "$.content.personalData.email", "", ""},
		{"text", "$.text", "", ""},
		{"whole content", "$.content", "", ""},
		{"a wildcard that names one exact key", "$.content.people[*].email", "", ""},
		{"a key that is not there in any case", "$.content.address", "", ""},
		{"a key present in both cases", "$.content.both", "", ""},
		{"top-level case", "$.content.PersonalData", "metadata.piiFields[0]", `content has "personalData", not "PersonalData"`},
		{"nested case", "$.content.personalData.EMAIL", "metadata.piiFields[0]", `content has "email", not "EMAIL"`},
		{"case under an index", "$.content.people[0].email", "metadata.piiFields[0]", `content has "Email", not "email"`},
		{"case under a negative index", "$.content.people[-1].EMAIL", "metadata.piiFields[0]", `content has "email", not "EMAIL"`},
		{"recursive descent", "$..email", "metadata.piiFields[0]", "recursive descent"},
		{"no dollar", "content.a", "metadata.piiFields[0]", "must start with $"},
		{"a slice", "$.content.people[0:1]", "metadata.piiFields[0]", "index must be an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := h4r.Item{ID: "x", Text: "t", Content: content, Metadata: h4r.Metadata{ContainsPII: true, PIIFields: []string{tt.path}}}
			err := it.Validate("")
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v, want the path accepted", err)
				}
				return
			}
			var e *h4r.Error
			if !errors.As(err, &e) || e.Code != h4r.EINVALID || e.Field != tt.field || !strings.Contains(e.Message, tt.want) {
				t.Fatalf("Validate: %v, want invalid_argument on %s containing %q", err, tt.field, tt.want)
			}
		})
	}
}
